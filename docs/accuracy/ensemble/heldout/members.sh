#!/bin/bash
# members.sh XMC TRAIN HELD TEST: each default member trained alone on all of TRAIN and on TRAIN without the rows of
# HELD (a data file of held-out rows, train.HeldoutSplit's written out, as for ../fit/refit.sh), seed 1, 1 rank x 2
# threads; prints each training's rows and test P@1.
X=$1 TRAIN=$2 HELD=$3 TEST=$4
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
python3 - "$TRAIN" "$HELD" "$t/kept.txt" <<'PY'
import sys
from collections import Counter
train, held, out = sys.argv[1:]
rows = open(train).read().splitlines()
left = Counter(open(held).read().splitlines()[1:])
kept = []
for r in rows[1:]:
    if left[r] > 0:
        left[r] -= 1
    else:
        kept.append(r)
head = rows[0].split()
open(out, 'w').write(' '.join([str(len(kept))] + head[1:]) + '\n' + '\n'.join(kept) + '\n')
PY
for f in "$TRAIN" "$t/kept.txt"; do
  for m in forest ppdsparse "plt --loss sqhinge --cost 1"; do
    $X train --algo $m --data "$f" --test "$TEST" --threads 2 --checkpoint none --seed 1 --model-out "$t/m" --summary "$t/s.json" > /dev/null 2>&1
    python3 -c "import json; d = json.load(open('$t/s.json')); print('rows', $(head -1 "$f" | cut -d' ' -f1), '$m', 'P@1 %.2f' % d['metrics']['P@1'])"
  done
done
