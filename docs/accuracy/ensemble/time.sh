#!/bin/bash
# Same-run times: members alone (whole training set) and the ensemble; predict costs.
X=/work/main/xmc
D=/tmp/ensx/t; mkdir -p $D
for s in bibtex delicious debian-tags wordnet-hyper; do
  tr=/tmp/nxcrun/$s.train.txt; te=/tmp/nxcrun/$s.test.txt
  line="$s"
  for a in forest ppdsparse ensemble; do
    st=$(date +%s.%N)
    $X train --algo $a --data $tr --model-out $D/$s.$a --threads 2 --checkpoint none > $D/$s.$a.log 2>&1
    en=$(date +%s.%N)
    line="$line $a=$(echo "$en - $st" | bc | cut -c1-6)"
  done
  for m in $s.forest $s.ppdsparse $s.ensemble; do
    $X predict --model $D/$m --data $te --out $D/$m.scores --threads 2 > $D/$m.plog 2>&1
    line="$line pred:$m=$(grep -o 'predict_s=[0-9.]*' $D/$m.plog | cut -d= -f2)"
  done
  echo $line
done
