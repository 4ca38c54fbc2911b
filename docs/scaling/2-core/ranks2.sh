#!/bin/bash
# ranks2.sh OLD NEW ROUNDS: each trainer on its issue-30 set (as serial.sh) at 2 in-process ranks x 1 thread, the
# two binaries alternating; prints the trainer, the binary and train_s.
O=$1 N=$2 R=$3 DATA=${DATA:-/tmp/ed}
run() { b=$1 name=$2; shift 2; $b train "$@" --ranks 2 --threads 1 --checkpoint none --model-out r2m --summary r2.json >/dev/null 2>&1 || echo "FAIL $name"
  echo "$name $(basename $b) $(python3 -c "import json;print(round(json.load(open('r2.json'))['train_s'],2))")"; }
for r in $(seq $R); do for b in $O $N; do
  run $b forest16 --algo forest --trees 16 --data wiki20k.txt
  run $b dismec --algo dismec --data $DATA/delicious.train.txt
  run $b ppdsparse --algo ppdsparse --data $DATA/delicious.train.txt
  run $b pdsparse --algo pdsparse --data $DATA/wordnet-mc.train.txt
  run $b memoir --algo memoir --data $DATA/wordnet-mc.train.txt
done; done
