#!/bin/bash
# Same-run times: the ensemble's members trained alone on the whole training set, the ensemble, and the
# prediction of each. Usage: time.sh DATA OUT, DATA holding SET.train.txt and SET.test.txt (decompressed) of
# bibtex, delicious, debian-tags and wordnet-hyper; XMC (default bin/xmc) is the binary, MEMBERS (default
# "forest,ppdsparse,plt --loss sqhinge --cost 1", the default members: comma-separated, each an algorithm and
# its flags) the members trained alone.
# Prints per set the wall seconds of each training and the predict_s of each prediction.
X=${XMC:-bin/xmc}
IFS=',' read -ra MS <<< "${MEMBERS:-forest,ppdsparse,plt --loss sqhinge --cost 1}"
DATA=$1 D=$2
mkdir -p $D
for s in bibtex delicious debian-tags wordnet-hyper; do
  tr=$DATA/$s.train.txt; te=$DATA/$s.test.txt
  line="$s"
  names=()
  for i in "${!MS[@]}" ensemble; do
    if [ $i = ensemble ]; then a=ensemble; flags=; name=ensemble; else m=${MS[$i]}; a=${m%% *}; flags=${m#"$a"}; name=$i-$a; fi
    names+=($name)
    st=$(date +%s.%N)
    $X train --algo $a $flags --data $tr --model-out $D/$s.$name --threads 2 --checkpoint none > $D/$s.$name.log 2>&1
    en=$(date +%s.%N)
    line="$line $name=$(echo "$en - $st" | bc | cut -c1-6)"
  done
  for name in "${names[@]}"; do
    m=$s.$name
    $X predict --model $D/$m --data $te --out $D/$m.scores --threads 2 > $D/$m.plog 2>&1
    line="$line pred:$name=$(grep -o 'predict_s=[0-9.]*' $D/$m.plog | cut -d= -f2)"
  done
  echo $line
done
