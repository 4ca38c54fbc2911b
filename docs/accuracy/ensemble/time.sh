#!/bin/bash
# Same-run times: the ensemble's members trained alone on the whole training set, the ensemble, and the
# prediction of each. Usage: time.sh DATA OUT, DATA holding SET.train.txt and SET.test.txt (decompressed) of
# bibtex, delicious, debian-tags and wordnet-hyper; XMC (default bin/xmc) is the binary, MEMBERS (default
# "forest ppdsparse plt", the default members) the members trained alone.
# Prints per set the wall seconds of each training and the predict_s of each prediction.
X=${XMC:-bin/xmc}
MEMBERS=${MEMBERS:-forest ppdsparse plt}
DATA=$1 D=$2
mkdir -p $D
for s in bibtex delicious debian-tags wordnet-hyper; do
  tr=$DATA/$s.train.txt; te=$DATA/$s.test.txt
  line="$s"
  for a in $MEMBERS ensemble; do
    st=$(date +%s.%N)
    $X train --algo $a --data $tr --model-out $D/$s.$a --threads 2 --checkpoint none > $D/$s.$a.log 2>&1
    en=$(date +%s.%N)
    line="$line $a=$(echo "$en - $st" | bc | cut -c1-6)"
  done
  for a in $MEMBERS ensemble; do
    m=$s.$a
    $X predict --model $D/$m --data $te --out $D/$m.scores --threads 2 > $D/$m.plog 2>&1
    line="$line pred:$m=$(grep -o 'predict_s=[0-9.]*' $D/$m.plog | cut -d= -f2)"
  done
  echo $line
done
