#!/bin/bash
# refit.sh OLD NEW: in a folder holding the default ensembles of the accuracy runs (acc-ens5/, seeds 1-3,
# `xmc-bench accuracy --algos ensemble`) and their held-out rows (held.SET.sS.txt, train.HeldoutSplit's rows
# written out, as for ../loss/bag.sh), refit each ensemble's weights on its held-out rows with the xmc binaries
# OLD and NEW, one after the other, and print each refit's wall seconds (held-out prediction included), whether
# the two ensemble files are the same bytes, their weights where they are not, and whether the two predict the
# test rows the same.
old=$1 new=$2
mkdir -p refit
for d in bibtex delicious debian-tags wordnet-hyper; do
  for s in 1 2 3; do
    E=$PWD/acc-ens5/${d}__ensemble__s$s.model
    line="$d s$s"
    for v in old new; do
      bin=${!v}
      /usr/bin/time -f %e -o refit/time $bin ensemble --out refit/$d.s$s.$v.e --heldout held.$d.s$s.txt \
        --model $E.0-forest --model $E.1-ppdsparse --model $E.2-plt --seed $s --threads 2 >/dev/null 2>&1 || echo FAIL $d $s $v
      line="$line $v $(cat refit/time) s"
    done
    if cmp -s refit/$d.s$s.old.e refit/$d.s$s.new.e; then
      echo "$line, same bytes"
      continue
    fi
    echo "$line, files differ: weights $(grep -ao '"weight":[^,]*' refit/$d.s$s.old.e | cut -d' ' -f2 | tr '\n' ' ')against $(grep -ao '"weight":[^,]*' refit/$d.s$s.new.e | cut -d' ' -f2 | tr '\n' ' ')"
    for v in old new; do
      $new predict --model refit/$d.s$s.$v.e --data $d.test.txt --out refit/$d.s$s.$v.scores --threads 2 >/dev/null 2>&1 || echo FAIL predict
    done
    cmp -s refit/$d.s$s.old.scores refit/$d.s$s.new.scores && echo "  the same test predictions" || echo "  TEST PREDICTIONS DIFFER"
  done
done
