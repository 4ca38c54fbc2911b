#!/bin/bash
# napkinXC side by side: 3 settings (its defaults, --ensemble 3, Parabel's), 4 sets, seed 1, 2 threads.
# Usage: run.sh DATA, DATA holding SET.train.txt and SET.test.txt (decompressed) of bibtex, delicious,
# debian-tags and wordnet-hyper; NXC (default nxc) is napkinXC's binary. Models and logs go to DATA.
NXC=${NXC:-nxc}
cd "$1" || exit 1
for s in bibtex delicious debian-tags wordnet-hyper; do
 for cfg in "plt:" "ens3:--ensemble 3" "parabel:--ensemble 3 --loss squaredHinge -C 1"; do
  name=${cfg%%:*}; args=${cfg#*:}
  rm -rf m.$s.$name
  start=$(date +%s.%N)
  $NXC train -i $s.train.txt -o m.$s.$name -t 2 --seed 1 $args > log.$s.$name.train 2>&1
  end=$(date +%s.%N)
  $NXC test -i $s.test.txt -o m.$s.$name -t 2 --topK 5 --measures p@1,p@3,p@5 --metricsPrecision 6 $args > log.$s.$name.test 2>&1
  echo "$s $name train_s $(echo "$end - $start" | bc) $(grep -i 'p@' log.$s.$name.test | tr '\n' ' ')"
 done
done
