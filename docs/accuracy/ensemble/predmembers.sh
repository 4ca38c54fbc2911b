#!/bin/bash
# An ensemble's prediction against its members', interleaved. Usage: predmembers.sh XMC TEST ROUNDS ENSEMBLE,
# ENSEMBLE an ensemble file of xmc train --algo ensemble, its members beside it (ENSEMBLE.0-forest, ...), and TEST
# the test file. Predicts with each member and the ensemble in turn, ROUNDS times, 1 rank × 2 threads, and prints
# the best predict_s of each, the ensemble's ratio to the members' sum (best and median of the rounds) and each
# round's ratio.
X=$1 TEST=$2 R=$3 E=$4
for r in $(seq "$R"); do
  for m in "$E".*-* "$E"; do
    case $m in *.scores) continue;; esac
    echo "$m $($X predict --model "$m" --data "$TEST" --out "$m.scores" --threads 2 2>&1 |
      grep -o 'predict_s=[0-9.]*' | cut -d= -f2)"
  done
done | python3 -c '
import sys, statistics as st
E = sys.argv[1]
d = {}
for line in sys.stdin:
    m, v = line.split()
    d.setdefault(m, []).append(float(v))
members = [m for m in d if m != E]
e = d[E]
rounds = [sum(d[m][i] for m in members) for i in range(len(e))]
print(E, " + ".join("%.3f" % min(d[m]) for m in members), "against %.3f at best," % min(e),
      "ratio %.3f, median ratio %.3f, rounds" % (min(e) / sum(min(d[m]) for m in members), st.median(e) / st.median(rounds)),
      " ".join("%.2f" % (e[i] / rounds[i]) for i in range(len(e))))
' "$E"
