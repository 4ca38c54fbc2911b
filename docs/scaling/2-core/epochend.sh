#!/bin/bash
# epochend.sh OLD NEW: PD-Sparse and MEMOIR on wmc.train.txt (wordnet-mc, decompressed), one epoch with --heldout 0.05
# (so one end of epoch: the held-out figure, and MEMOIR's index recall), at 16 in-process ranks of one thread, OLD's
# build then NEW's; prints what a rank received in all in the run's collectives (the summary's comm, the mean over
# the ranks), and DIFF where NEW's model differs from OLD's.
O=$1 N=$2
for algo in pdsparse memoir; do for b in $O $N; do
  $b train --algo $algo --data wmc.train.txt --heldout 0.05 --ranks 16 --threads 1 --epochs 1 --checkpoint none \
    --summary e.json --model-out e.$(basename $b) 2>/dev/null
  python3 -c "
import json;d=json.load(open('e.json'))
recv=sum(o['bytes_recv'] for r in d['comm'] for o in r['ops'])/len(d['comm'])
print('$algo', '$(basename $b)', 'received in all: %.0f bytes a rank'%recv)"
done; cmp -s e.$(basename $O) e.$(basename $N) || echo DIFF; done
