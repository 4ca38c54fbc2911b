#!/bin/bash
# run4.sh SET...: the ensemble of four members (the default three and DiSMEC) on each set, seeds 1-3, 1 rank x 2
# threads; prints the set, the seed, test P@1, P@3, P@5 and train_s. X: the xmc binary; DATA: the directory of
# SET.train.txt and SET.test.txt (decompressed). Output of 2026-11-27: run4.txt.
X=${X:-bin/xmc} DATA=${DATA:-/tmp/ed}
for d in "$@"; do for s in 1 2 3; do
  $X train --algo ensemble --member forest --member ppdsparse --member "plt --loss sqhinge --cost 1" --member dismec \
    --data $DATA/$d.train.txt --test $DATA/$d.test.txt --threads 2 --checkpoint none --seed $s \
    --model-out $d.s$s --summary $d.s$s.json >/dev/null 2>$d.s$s.log
  python3 -c "
import json; d=json.load(open('$d.s$s.json')); m=d['metrics']; print('$d', $s, m['P@1'], m['P@3'], m['P@5'], d['train_s'])"
done; done
