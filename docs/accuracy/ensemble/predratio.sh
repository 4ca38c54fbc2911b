#!/bin/bash
# The ensemble's prediction against its members', interleaved. Usage: predratio.sh XMC OUT DATA [ROUNDS], OUT
# holding the models time.sh wrote (SET.forest, SET.ppdsparse, SET.ensemble) and DATA the decompressed
# SET.test.txt. Predicts with each model in turn, ROUNDS (5) times, 1 rank × 2 threads, and prints per set the best
# predict_s of each, the ensemble's ratio to the members' sum (best and median of the rounds) and each round's ratio.
X=$1 D=$2 DATA=$3 R=${4:-5}
for s in bibtex delicious debian-tags wordnet-hyper; do
  for r in $(seq $R); do for m in forest ppdsparse ensemble; do
    echo "$s $m $($X predict --model $D/$s.$m --data $DATA/$s.test.txt --out $D/$s.$m.ratio-scores --threads 2 2>&1 |
      grep -o 'predict_s=[0-9.]*' | cut -d= -f2)"
  done; done
done | python3 -c '
import sys, statistics as st
d = {}
for line in sys.stdin:
    s, m, v = line.split()
    d.setdefault(s, {}).setdefault(m, []).append(float(v))
for s, ms in d.items():
    f, p, e = ms["forest"], ms["ppdsparse"], ms["ensemble"]
    print(s, "best %.3f + %.3f against %.3f, ratio %.3f," % (min(f), min(p), min(e), min(e) / (min(f) + min(p))),
          "median ratio %.3f, rounds" % (st.median(e) / (st.median(f) + st.median(p))),
          " ".join("%.2f" % (e[i] / (f[i] + p[i])) for i in range(len(e))))
'
