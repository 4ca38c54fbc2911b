#!/bin/bash
# pdsparse-e4f.sh OLD NEW ROUNDS: PD-Sparse at 2 in-process ranks x 1 thread on three sets, the two binaries alternating.
O=$1 N=$2 R=$3
run() { b=$1 name=$2; shift 2; $b train --algo pdsparse "$@" --ranks 2 --threads 1 --checkpoint none --model-out p2m --summary p2.json >/dev/null 2>&1 || echo "FAIL $name"
  echo "$name $(basename $b) $(python3 -c "import json;d=json.load(open('p2.json'));print(round(d['train_s'],2))")"; }
for r in $(seq $R); do for b in $O $N; do
  run $b wordnet-mc --data /work/shared/data/wordnet-mc/train.txt.gz
  run $b delicious --data /work/main/testdata/delicious/train.txt
  run $b bibtex --data /work/main/testdata/bibtex/train.txt
done; done
