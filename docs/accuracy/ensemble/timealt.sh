#!/bin/bash
# timealt.sh XMC TRAIN ROUNDS: the default members trained alone on TRAIN, then the ensemble, in alternating rounds,
# 1 rank x 2 threads, wall seconds of each command; prints each round's times and ensemble / sum.
X=$1 TRAIN=$2 R=${3:-5}
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
wall() { local s e; s=$(date +%s.%N); "$@" > "$t/log" 2>&1 || { cat "$t/log"; exit 1; }; e=$(date +%s.%N); echo "$e - $s" | bc; }
for r in $(seq "$R"); do
  f=$(wall $X train --algo forest --data "$TRAIN" --model-out $t/m --threads 2 --checkpoint none)
  p=$(wall $X train --algo ppdsparse --data "$TRAIN" --model-out $t/m --threads 2 --checkpoint none)
  l=$(wall $X train --algo plt --loss sqhinge --cost 1 --data "$TRAIN" --model-out $t/m --threads 2 --checkpoint none)
  e=$(wall $X train --algo ensemble --data "$TRAIN" --model-out $t/e --threads 2 --checkpoint none)
  echo "round $r forest=$f ppdsparse=$p plt=$l ensemble=$e ensemble/sum=$(echo "scale=3; $e / ($f + $p + $l)" | bc)"
done
