#!/bin/bash
# The ensemble's training beside napkinXC's with Parabel's settings, one after the other, the whole commands'
# wall seconds, 2 threads, seed 1. Usage: napkin.sh XMC NXC DATA OUT, DATA holding SET.train.txt (decompressed),
# NXC napkinXC's nxc (v0.7.2, cmake -DEXE=ON -DPYTHON=OFF).
X=$1 NXC=$2 DATA=$3 D=$4
mkdir -p "$D"
for s in bibtex delicious debian-tags wordnet-hyper; do
  st=$(date +%s.%N)
  $NXC train -i "$DATA/$s.train.txt" -o "$D/$s.nxc" -t 2 --seed 1 --ensemble 3 --loss squaredHinge -C 1 > "$D/$s.nxc.log" 2>&1
  mid=$(date +%s.%N)
  $X train --algo ensemble --seed 1 --data "$DATA/$s.train.txt" --threads 2 --checkpoint none --model-out "$D/$s.ens" > "$D/$s.ens.log" 2>&1
  en=$(date +%s.%N)
  python3 -c 'import sys; s, a, b, c = sys.argv[1], *map(float, sys.argv[2:]); print(s, "napkinXC %.2f s, xmc ensemble %.2f s, ratio %.2f" % (b - a, c - b, (c - b) / (b - a)))' $s $st $mid $en
done
