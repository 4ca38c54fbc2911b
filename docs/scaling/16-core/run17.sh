#!/usr/bin/env bash
# Run 17 (prepared 2026-11-27): the machine's ceiling (numa's
# BenchmarkCeiling at 1, 8, 15 and 16 workers), then every trainer at 16
# threads against 15 (one CPU left to the Go runtime and the system), and
# PD-Sparse with the collector off (GOGC=off), alternating; one-thread
# baselines of DiSMEC and PPDSparse and PD-Sparse in the same run.
set -u
O=$1; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv17; mkdir -p "$O/l" "$K"; T0=$(date +%s)
r() { # name env... -- args
  local n=$1; shift; local e=(); while [ "$1" != -- ]; do e+=("$1"); shift; done; shift
  env "${e[@]}" timeout 150 "$D/xmc" train --checkpoint none "$@" --summary "$O/l/$n.json" --model-out "$K/$n.model" > "$O/l/$n.log" 2>&1
  printf '%s\t%ss\t%s\t%s\n' "$n" "$(( $(date +%s) - T0 ))" "$(python3 -c '
import json,sys
s=json.load(open(sys.argv[1])); p=s["profile"][0]
e=p["busy_s"]/max(1e-9,p["workers"]*p["loop_s"])
print("train_s %.3f loopE %.2f" % (s["train_s"], e), s.get("trainer_stats") or "")' "$O/l/$n.json" 2>&1 | tail -1)" "$(md5sum < "$K/$n.model" | cut -c1-12)" | tee -a "$O/results.tsv"
  rm -f "$K/$n.model"
}
nproc > "$O/machine.txt"; lscpu >> "$O/machine.txt"
"$D/numa.test" -test.run XXX -test.bench Ceiling -test.benchtime 20x -test.count 2 > "$O/ceiling.txt" 2>&1
echo "ceiling done $(( $(date +%s) - T0 ))s" | tee -a "$O/results.tsv"
PD="--algo pdsparse --data $D/data/wordnet-mc/train.txt.gz"
for k in 1 2 3; do
  r pd-t16-$k X=1 -- --threads 16 $PD; r pd-t15-$k X=1 -- --threads 15 $PD
  r pd-t16-gcoff-$k GOGC=off -- --threads 16 $PD; r pd-t15-gcoff-$k GOGC=off -- --threads 15 $PD
done
DL="--data $D/../../testdata/delicious/train.txt"
for a in dismec ppdsparse; do
  for k in 1 2; do r $a-t16-$k X=1 -- --threads 16 --algo $a $DL; r $a-t15-$k X=1 -- --threads 15 --algo $a $DL; done
done
MM="--algo memoir --data $D/data/wordnet-mc/train.txt.gz"
for k in 1 2; do r memoir-t16-$k X=1 -- --threads 16 $MM; r memoir-t15-$k X=1 -- --threads 15 $MM; done
W=$K/w10
"$D/xmc" gen --n 25000 --d 101938 --l 30938 --labels 18.64 --features 673.4 --seed 1 --out "$W.all" >/dev/null
head -1 "$W.all" | awk '{print 20000, $2, $3}' > "$W.train"; sed -n '2,20001p' "$W.all" >> "$W.train"; rm "$W.all"
F="--algo forest --trees 16 --grow together --data $W.train"
for k in 1 2; do r forest-t16-$k X=1 -- --threads 16 $F; r forest-t15-$k X=1 -- --threads 15 $F; done
r pd-t1 X=1 -- --threads 1 $PD
r dismec-t1 X=1 -- --threads 1 --algo dismec $DL
r ppdsparse-t1 X=1 -- --threads 1 --algo ppdsparse $DL
tar -C "$O" -czf "$O/logs.tgz" l && rm -rf "$O/l"
