#!/bin/bash
# fuse.sh OLD OLDMPI NEW NEWMPI ROUNDS: MEMOIR on wmc.train.txt (wordnet-mc, decompressed), one epoch, at 16
# in-process ranks of one thread and under mpirun -np 2 and -np 4 (oversubscribed on a small machine), OLD's build
# then NEW's in each of ROUNDS rounds; prints train_s and, per collective, its calls on rank 0 and the ranks' mean
# seconds blocked in it, from the summary; DIFF where a model differs from OLD's at 16 in-process ranks.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OLD=$1 OLDM=$2 NEW=$3 NEWM=$4 R=$5 EP=${EPOCHS:-1}
f() { python3 -c "
import json;d=json.load(open('$1'));c=d['comm']
ops=[o['op'] for o in c[0]['ops'] if o['op'] in ('allreduce','allgatherv','alltoallv')]
def blocked(op): return sum(o['blocked_seconds'] for r in c for o in r['ops'] if o['op']==op)/len(c)
calls={o['op']:o['calls'] for o in c[0]['ops']}
print('$2', 'train_s', round(d['train_s'],2), ' '.join('%s=%d/%.2fs'%(op,calls[op],blocked(op)) for op in ops))"; }
for r in $(seq $R); do
  for N in old new; do
    if [ $N = old ]; then X=$OLD XM=$OLDM; else X=$NEW XM=$NEWM; fi
    $X train --algo memoir --epochs $EP --data wmc.train.txt --ranks 16 --threads 1 --checkpoint none --summary a.json --model-out m16.$N 2>/dev/null; f a.json "$N r16"
    for np in 2 4; do
      mpirun -np $np --oversubscribe --bind-to none $XM train --algo memoir --epochs $EP --data wmc.train.txt --threads 1 --checkpoint none --summary a.json --model-out mm$np.$N 2>/dev/null; f a.json "$N mpi$np"
    done
  done
done
for m in m16.new mm2.old mm2.new mm4.old mm4.new; do cmp -s m16.old $m || echo "DIFF $m"; done
