#!/bin/bash
# Projection of DiSMEC's and PPDSparse's core-seconds at the real-N
# Amazon-670K shape on the lent machine. Usage: dev/project.sh OUT N SAMPLE THREADS
out=${1:?}; n=${2:-490449}; sample=${3:-32}; threads=${4:-16}
B=$(pwd)/dev/bin
mkdir -p "$out"
w=/tmp/proj-$$
nproc; lscpu | grep -E "Model name|NUMA node\(s\)" ; free -g | head -2
for a in ppdsparse dismec; do
  /usr/bin/time -v $B/xmc-bench project --xmc $B/xmc --out $w --n $n --sample $sample --threads $threads --algos $a > "$out/$a.txt" 2> "$out/$a.err"
  echo "exit $? for $a"; cat "$out/$a.txt"
  mkdir -p "$out/$a-summaries"; cp $w/${a}__*.json "$out/$a-summaries/" 2>/dev/null
  grep -E "Elapsed|Maximum resident" "$out/$a.err"
done
