#!/bin/bash
# cand.sh SET: refit the 3-member ensembles of seeds 1-3 (xmc-bench accuracy's, in acc-ens3/) with the label tree
# proposing c·k labels (c = 1, 2, 3, 6; a debug build, xmcc, read c from XMC_PLT_CAND), and print test P@1/3/5,
# predict_s and the fitted weights. held.SET.sS.txt are the held-out rows of seed S (train.HeldoutSplit(ds, 0.05, S),
# written by a scratch program): xmc ensemble on them refits exactly the weights of xmc train --algo ensemble.
d=$1
for s in 1 2 3; do
  E=acc-ens3/${d}__ensemble__s$s.model
  for c in ${CS:-1 2 3 6}; do
    out=cand/$d.s$s.c$c.e
    XMC_PLT_CAND=$c ./xmcc ensemble --out $out --heldout held.$d.s$s.txt --model $E.0-forest --model $E.1-ppdsparse --model $E.2-plt --seed $s --threads 2 >/dev/null 2>&1 || echo FAIL
    t=$(XMC_PLT_CAND=$c ./xmcc predict --model $out --data $d.test.txt --out $out.scores --threads 2 2>&1 | grep -o 'predict_s=[0-9.]*' | cut -d= -f2)
    p=$(./xmcc eval --data $d.test.txt $out.scores 2>&1 | awk '/^P@[135] /{printf "%s ", $2}')
    w=$(./xmcc inspect --model $out 2>&1 | grep -o " 0\.[0-9]\{4\} " | tr -d "\n")
    echo "$d s$s c$c P $p t $t w $w"
  done
done
