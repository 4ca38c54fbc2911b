#!/bin/bash
# share16.sh OLD NEW ROUNDS: PD-Sparse on wmc.train.txt (wordnet-mc, decompressed), 3 epochs, at 16 in-process ranks of
# one thread (oversubscribed on a small machine: read the CPU, not the time), OLD's build then NEW's in each of ROUNDS
# rounds; prints the wall, user and system seconds, train_s and the ranks' mean collective, serial and loop seconds
# from the summary's profile, the ranks' mean round phases (ms a round) where the trainer reports them, and DIFF
# where NEW's model differs from OLD's. ALGO=memoir EPOCHS=1 share16.sh ... runs
# MEMOIR for one epoch instead.
O=$1 N=$2 R=$3 ALGO=${ALGO:-pdsparse} EPOCHS=${EPOCHS:-3}
for r in $(seq $R); do for b in $O $N; do
  /usr/bin/time -f "$(basename $b) %e s %U user %S sys" $b train --algo $ALGO --data wmc.train.txt --ranks 16 --threads 1 \
    --epochs $EPOCHS --checkpoint none --summary r16.json --model-out r16.$(basename $b) 2>&1 | tail -1
  python3 -c "
import json;d=json.load(open('r16.json'));p=d['profile'];m=lambda k: round(sum(x[k] for x in p)/len(p),2)
s=d.get('trainer_stats') or [{}];ph={k.replace('_ms_per_round',''):round(sum(x[k] for x in s)/len(s),3) for k in s[0] if k.endswith('_ms_per_round')}
print('  train_s',round(d['train_s'],2),'collective_s mean',m('collective_s'),'serial_s mean',m('serial_s'),'loop_s mean',m('loop_s'))
if ph: print('  ms a round, mean of the ranks:',' '.join('%s=%s'%kv for kv in sorted(ph.items())))"
done; done
cmp -s r16.$(basename $O) r16.$(basename $N) || echo DIFF
