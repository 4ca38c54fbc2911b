#!/bin/bash
# napkinXC side by side: 3 configs, 4 sets, seed 1, 2 threads.
cd /tmp/nxcrun
for s in bibtex delicious debian-tags wordnet-hyper; do
 for cfg in "plt:" "ens3:--ensemble 3" "parabel:--ensemble 3 --loss squaredHinge -C 1"; do
  name=${cfg%%:*}; args=${cfg#*:}
  rm -rf m.$s.$name
  start=$(date +%s.%N)
  /tmp/nxc/nxc train -i $s.train.txt -o m.$s.$name -t 2 --seed 1 $args > log.$s.$name.train 2>&1
  end=$(date +%s.%N)
  /tmp/nxc/nxc test -i $s.test.txt -o m.$s.$name -t 2 --topK 5 --measures p@1,p@3,p@5 --metricsPrecision 6 $args > log.$s.$name.test 2>&1
  echo "$s $name train_s $(echo "$end - $start" | bc) $(grep -i 'p@' log.$s.$name.test | tr '\n' ' ')"
 done
done
