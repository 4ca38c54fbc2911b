#!/bin/bash
# pltidx.sh: a label tree's prediction, the build searching a node's columns by binary search (xmc1) against the
# build with bitmaps (xmc2), alternating, top 5 and 30: predict_s and peak RSS (KiB); "same": the same score files.
# Run in a directory holding both builds, SET.test.txt and acc-ens3/ (xmc-bench accuracy --algos ensemble's output).
for r in 1 2 3; do
 for d in debian-tags wordnet-hyper; do
  for k in 5 30; do
   for b in xmc1 xmc2; do
    o=$( { /usr/bin/time -f "rss %M" ./$b predict --model acc-ens3/${d}__ensemble__s1.model.2-plt --data $d.test.txt --out /tmp/ed/pi.$b.scores --threads 2 --top-k $k; } 2>&1 | grep -o 'predict_s=[0-9.]*\|rss [0-9]*' | tr '\n' ' ')
    echo "$r $d $k $b $o"
   done
   cmp -s pi.xmc1.scores pi.xmc2.scores && echo same || echo DIFFER
  done
 done
done
