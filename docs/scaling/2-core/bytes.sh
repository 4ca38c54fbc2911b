#!/bin/bash
# bytes.sh OLD NEW: PD-Sparse and MEMOIR on wmc.train.txt (wordnet-mc, decompressed), one epoch, at 2, 4 and 16
# in-process ranks of one thread, OLD's build then NEW's; prints what each rank received a round in the rounds'
# collectives (the summary's comm: all-gathers and all-to-alls, the mean over the ranks, per round; MEMOIR's include
# the end of the epoch's recall reports, the same in both), and DIFF where NEW's model differs from OLD's.
# ALGOS=pdsparse bytes.sh ... runs PD-Sparse alone.
O=$1 N=$2
for algo in ${ALGOS:-pdsparse memoir}; do for R in 2 4 16; do for b in $O $N; do
  $b train --algo $algo --data wmc.train.txt --ranks $R --threads 1 --epochs 1 --checkpoint none \
    --summary b.json --model-out b.$(basename $b) 2>/dev/null
  python3 -c "
import json;d=json.load(open('b.json'))
ops=[{o['op']:o for o in r['ops']} for r in d['comm']]
n=75991//64+1 # the rounds of one epoch of wordnet-mc's 75,991 rows at the default batch of 64
recv=sum(o[k]['bytes_recv'] for o in ops for k in ('allgatherv','alltoallv') if k in o)/len(ops)/n
print('$algo', 'ranks $R', '$(basename $b)', 'received a round: %.0f bytes'%recv, 'train_s %.2f'%d['train_s'])"
done; cmp -s b.$(basename $O) b.$(basename $N) || echo DIFF; done; done
