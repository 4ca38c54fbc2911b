#!/bin/bash
# [ALGO=pdsparse] layouts.sh XMC XMCMPI ROUNDS: the algorithm on wmc.train.txt (wordnet-mc, decompressed) at 1 and 2 threads, 2
# in-process ranks, mpirun -np 1 and -np 2, ROUNDS alternating rounds; prints the layout, train_s and (serial +
# collectives) / train from the summary, and DIFF where a model differs from the first layout's.
X=$1 XM=$2 R=$3 A=${ALGO:-pdsparse}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
f() { python3 -c "
import json,sys;d=json.load(open('$1'));p=d['profile'][0];print('$2', round(d['train_s'],2), 'serial_f %.4f'%((p['serial_s']+p['collective_s'])/p['train_s']))"; }
for r in $(seq $R); do
  $X train --algo $A --data wmc.train.txt --threads 1 --checkpoint none --summary a.json --model-out ma 2>/dev/null; f a.json t1
  $X train --algo $A --data wmc.train.txt --threads 2 --checkpoint none --summary a.json --model-out mb 2>/dev/null; f a.json t2
  $X train --algo $A --data wmc.train.txt --ranks 2 --threads 1 --checkpoint none --summary a.json --model-out mc 2>/dev/null; f a.json r2
  mpirun -np 1 $XM train --algo $A --data wmc.train.txt --threads 1 --checkpoint none --summary a.json --model-out md 2>/dev/null; f a.json mpi1
  mpirun -np 2 $XM train --algo $A --data wmc.train.txt --threads 1 --checkpoint none --summary a.json --model-out me 2>/dev/null; f a.json mpi2
  for m in mb mc md me; do cmp -s ma $m || echo "DIFF $m"; done
done
