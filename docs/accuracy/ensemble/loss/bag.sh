#!/bin/bash
# bag.sh SET: refit the ensembles of seeds 1-3 (TAG empty: acc-ens4/, the accuracy runs of the build before,
# members forest, ppdsparse and a logistic plt; TAG=sh1: E/sh1.SET.S of ensrun.sh, its plt --loss sqhinge --cost 1)
# on the same held-out rows (held.SET.sS.txt, train.HeldoutSplit's rows written out) with B bootstrap resamples
# for each B in $BS, and print test P@1/3/5, the refit's wall seconds and the weights. xmcB was a debug build whose
# Fit read B from XMC_BAGS (0: one search on all rows, as before) and drew every resample from one random stream.
d=$1
mkdir -p bag
for s in 1 2 3; do
  if [ -n "$TAG" ]; then E=E/$TAG.$d.$s; else E=acc-ens4/${d}__ensemble__s$s.model; fi
  for b in ${BS:-0 10}; do
    out=bag/$TAG$d.s$s.b$b.e
    /usr/bin/time -f %e -o bag/fit.time env XMC_BAGS=$b ./xmcB ensemble --out $out --heldout held.$d.s$s.txt --model $E.0-forest --model $E.1-ppdsparse --model $E.2-plt --seed $s --threads 2 >/dev/null 2>&1 || echo FAIL
    ./xmcB predict --model $out --data $d.test.txt --out $out.scores --threads 2 >/dev/null 2>&1
    p=$(./xmcB eval --data $d.test.txt $out.scores 2>&1 | awk '/^P@[135] /{printf "%s ", $2}')
    w=$(./xmcB inspect --model $out 2>&1 | grep -o " 0\.[0-9]\{4\} " | tr -d "\n")
    echo "$TAG $d s$s b$b P $p fit_s $(cat bag/fit.time) w $w"
  done
done
