#!/bin/bash
# homes2.sh OLD NEW ROUNDS: PD-Sparse on wmc.train.txt (wordnet-mc, decompressed) at 2 in-process ranks of one
# thread, OLD's build then NEW's in each of ROUNDS rounds; prints the wall and user seconds, train_s and the ranks'
# mean round phases (ms a round), and DIFF where NEW's model differs from OLD's.
O=$1 N=$2 R=$3
for r in $(seq $R); do for b in $O $N; do
  /usr/bin/time -f "$(basename $b) %e s %U user" $b train --algo pdsparse --data wmc.train.txt --ranks 2 --threads 1 \
    --checkpoint none --summary h2.json --model-out h2.$(basename $b) 2>&1 | tail -1
  python3 -c "
import json;d=json.load(open('h2.json'));s=d['trainer_stats']
print('   train_s %.2f'%d['train_s'],' '.join('%s=%.3f'%(k.replace('_ms_per_round',''),sum(x[k] for x in s)/len(s)) for k in sorted(s[0]) if k.endswith('_ms_per_round')))"
done; done
cmp -s h2.$(basename $O) h2.$(basename $N) || echo DIFF
