#!/bin/bash
# share.sh OLD OLDMPI NEW NEWMPI ROUNDS: PD-Sparse on wmc.train.txt (wordnet-mc, decompressed) at 1 and 2 threads, 2
# in-process ranks and mpirun -np 2, OLD's build then NEW's in each of ROUNDS rounds; prints train_s and the round
# phases (ms a round) from the summary, and DIFF where a model differs from OLD's at one thread.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OLD=$1 OLDM=$2 NEW=$3 NEWM=$4 R=$5
f() { python3 -c "
import json;d=json.load(open('$1'));s=d['trainer_stats'][0];print('$2', round(d['train_s'],2), ' '.join('%s=%s'%(k.replace('_ms_per_round',''),v) for k,v in sorted(s.items()) if k!='heldout_s'))"; }
for r in $(seq $R); do
  for N in old new; do
    if [ $N = old ]; then X=$OLD XM=$OLDM; else X=$NEW XM=$NEWM; fi
    $X train --algo pdsparse --data wmc.train.txt --threads 1 --checkpoint none --summary a.json --model-out ma.$N 2>/dev/null; f a.json "$N t1"
    $X train --algo pdsparse --data wmc.train.txt --threads 2 --checkpoint none --summary a.json --model-out mb.$N 2>/dev/null; f a.json "$N t2"
    $X train --algo pdsparse --data wmc.train.txt --ranks 2 --threads 1 --checkpoint none --summary a.json --model-out mc.$N 2>/dev/null; f a.json "$N r2"
    mpirun -np 2 --bind-to none $XM train --algo pdsparse --data wmc.train.txt --threads 1 --checkpoint none --summary a.json --model-out me.$N 2>/dev/null; f a.json "$N mpi2"
  done
done
for m in ma.new mb.new mc.new me.new mb.old mc.old me.old; do cmp -s ma.old $m || echo "DIFF $m"; done
