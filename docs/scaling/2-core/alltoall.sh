#!/bin/bash
# alltoall.sh OLD OLDMPI NEW NEWMPI ROUNDS: PD-Sparse on wmc.train.txt (wordnet-mc, decompressed) at one thread,
# 2 in-process ranks and mpirun -np 2, OLD's build then NEW's in each of ROUNDS rounds; prints train_s, the round
# phases (ms a round) and the bytes rank 0 received a round in its all-gathers and all-to-alls, from the summary;
# DIFF where a model differs from OLD's at one thread. ALGO=memoir EPOCHS=2 alltoall.sh ... runs MEMOIR for 2 epochs
# instead (EPOCHS unset: the trainer's default).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OLD=$1 OLDM=$2 NEW=$3 NEWM=$4 R=$5 ALGO=${ALGO:-pdsparse} EP=${EPOCHS:+--epochs $EPOCHS}
f() { python3 -c "
import json;d=json.load(open('$1'));s=d['trainer_stats'][0]
ops={o['op']:o for o in d['comm'][0]['ops']} if d.get('comm') else {}
a2a,ag=(ops.get(k,{}).get('calls',0) for k in ('alltoallv','allgatherv'))
n=max((a2a+ag)//2 if '$ALGO'=='pdsparse' else (a2a or ag),1) # rounds: PD-Sparse's two collectives a round (all-gathers, all-to-alls or one of each), MEMOIR's all-to-all and all-gather, or its one all-gather before them
recv=' '.join('%s_recv=%d'%(k,ops[k]['bytes_recv']//n) for k in ('allgatherv','alltoallv') if k in ops and ops[k]['calls'])
print('$2', round(d['train_s'],2), ' '.join('%s=%s'%(k.replace('_ms_per_round',''),v) for k,v in sorted(s.items()) if k!='heldout_s'), recv)"; }
for r in $(seq $R); do
  for N in old new; do
    if [ $N = old ]; then X=$OLD XM=$OLDM; else X=$NEW XM=$NEWM; fi
    $X train --algo $ALGO $EP --data wmc.train.txt --threads 1 --checkpoint none --summary a.json --model-out ma.$N 2>/dev/null; f a.json "$N t1"
    $X train --algo $ALGO $EP --data wmc.train.txt --ranks 2 --threads 1 --checkpoint none --summary a.json --model-out mc.$N 2>/dev/null; f a.json "$N r2"
    mpirun -np 2 --bind-to none $XM train --algo $ALGO $EP --data wmc.train.txt --threads 1 --checkpoint none --summary a.json --model-out me.$N 2>/dev/null; f a.json "$N mpi2"
  done
done
for m in ma.new mc.new me.new mc.old me.old; do cmp -s ma.old $m || echo "DIFF $m"; done
