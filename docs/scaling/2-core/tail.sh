#!/bin/bash
# tail.sh OLD NEW ROUNDS: a forest of 3 and of 5 trees grown a tree per worker (--grow alone) at 2 threads on
# wiki20k.txt (the first 20,000 rows of `xmc gen --n 25000 --d 101938 --l 30938 --labels 18.64 --features 673.4
# --seed 1`), OLD's build then NEW's in each of ROUNDS rounds; prints train_s and the workers' busy time over 2 x the
# loop's (the loop efficiency), from the summary's profile; DIFF where NEW's model differs from OLD's.
O=$1 N=$2 R=$3
for r in $(seq $R); do for t in 3 5; do for b in $O $N; do
  $b train --algo forest --trees $t --grow alone --threads 2 --data wiki20k.txt --checkpoint none \
    --summary tail.json --model-out tail$t.$(basename $b) 2>/dev/null
  python3 -c "
import json;d=json.load(open('tail.json'));p=d['profile'][0]
print('$(basename $b) trees $t train_s', round(d['train_s'],2), 'loop E', round(p['busy_s']/(2*p['loop_s']),2))"
done; done; done
for t in 3 5; do cmp -s tail$t.$(basename $O) tail$t.$(basename $N) || echo "DIFF $t trees"; done
