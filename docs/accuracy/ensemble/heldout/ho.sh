#!/bin/bash
# The ensemble's test P@1, P@3 and P@5 by held-out share: xmc train --algo ensemble with the default members,
# 1 rank x 2 threads, for each set, fraction and seed.
# Usage: ho.sh XMC DATA OUT "SETS" "FRACS" "SEEDS", DATA holding SET.train.txt and SET.test.txt (decompressed).
# Prints: set fraction seed P@1 P@3 P@5 train_s held-out-rows. The summaries and logs stay in OUT.
X=$1 DATA=$2 OUT=$3 sets=$4 fracs=$5 seeds=$6
mkdir -p "$OUT"
for s in $sets; do for f in $fracs; do for seed in $seeds; do
  r=$OUT/r.$s.$f.$seed
  "$X" train --algo ensemble --data "$DATA/$s.train.txt" --test "$DATA/$s.test.txt" --threads 2 --checkpoint none \
    --seed "$seed" --heldout "$f" --model-out "$r.model" --summary "$r.json" > "$r.log" 2>&1 || { echo "$s $f $seed failed"; continue; }
  python3 -c "
import json
d = json.load(open('$r.json')); m = d['metrics']
print('$s $f $seed', *['%.2f' % m[k] for k in ('P@1', 'P@3', 'P@5')], '%.1f' % d['train_s'], end=' ')"
  grep -o 'heldout_rows=[0-9]*' "$r.log" | tail -1
  rm -f "$r.model"*
done; done; done
