#!/usr/bin/env bash
# Strong scaling on the device: the new xmc against 1 thread on the same
# machine, and e4f0867's xmc (base) at the widest layouts, interleaved.
# Usage: scale16.sh OUT MAX [WORK]  (MAX: the widest thread count, 16;
# results.tsv and summaries.tgz go to OUT, the data and logs to WORK).
# Put beside it: xmc (a static build, CGO_ENABLED=0 go build), xmc-base (the
# build to compare with), data/delicious/{train,test}.txt (testdata/) and
# data/wordnet-mc/{train,test}.txt.gz (the shared data sets).
set -u
O=$1; MAX=${2:-16}; K=${3:-/tmp/scale16}; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O" "$K/s"
NEW=$D/xmc; BASE=$D/xmc-base; R=$O/results.tsv
nproc; lscpu | grep -E "Model name|Socket|Core|Thread|NUMA node\(s\)" ; free -g | head -2
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); m = s.get("metrics", {}); b = s.get("balance") or {}
p = s.get("profile") or []
f = max([(q["serial_s"]+q["collective_s"])/max(1e-9, q["serial_s"]+q["collective_s"]+q["busy_s"]) for q in p] or [0])
e = min([q["busy_s"]/max(1e-9, q["workers"]*q["loop_s"]) for q in p] or [1])
print("train_s %.3f\tP@1 %.2f\tacc %.2f\trss_MiB %d\timbalance %s\tserial_f %.4f\tloopE %.2f" % (s["train_s"],
  m.get("P@1", 0), m.get("accuracy", 0), max(s.get("peak_rss_bytes") or [0]) >> 20, b.get("imbalance", "-"), f, e))
PY
}
run() { # bin name ranks threads args...
  local x=$1 n=$2 r=$3 t=$4; shift 4; local s=$K/s/$n.$x.r$r.t$t.json
  "$D/$x" train --ranks "$r" --threads "$t" --checkpoint none "$@" --summary "$s" >"$K/s/$n.$x.r$r.t$t.log" 2>&1
  printf '%s\t%s\tranks %s\tthreads %s\t%s\n' "$x" "$n" "$r" "$t" "$( [ -s "$s" ] && line "$s" || echo FAILED)" | tee -a "$R"
}
W=$K/wiki10
"$NEW" gen --n ${GEN_N:-25000} --d 101938 --l 30938 --labels 18.64 --features 673.4 --seed 1 --out "$W.all" >/dev/null
python3 - "$W" <<'PY'
import sys; p = sys.argv[1]; f = open(p + ".all"); n, d, l = f.readline().split(); rows = f.read().splitlines()
cut = len(rows) * 4 // 5
open(p + ".train", "w").write(f"{cut} {d} {l}\n" + "\n".join(rows[:cut]) + "\n")
open(p + ".test", "w").write(f"{len(rows) - cut} {d} {l}\n" + "\n".join(rows[cut:]) + "\n")
PY
rm -f "$W.all"
DL="--data $D/data/delicious/train.txt --test $D/data/delicious/test.txt"
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
FW="--data $W.train --test $W.test"
# One-vs-all and the trainers of rounds: 1 thread, MAX threads, MAX ranks.
for a in dismec ppdsparse; do
  run xmc $a-delicious 1 1 --algo $a $DL
  for x in xmc xmc-base; do run $x $a-delicious 1 $MAX --algo $a $DL; run $x $a-delicious $MAX 1 --algo $a $DL; done
done
for a in pdsparse memoir; do
  run xmc $a-wordnet-mc 1 1 --algo $a $MC
  for x in xmc xmc-base; do run $x $a-wordnet-mc 1 $MAX --algo $a $MC; run $x $a-wordnet-mc $MAX 1 --algo $a $MC; done
done
# Forest: 16 trees, 1 thread and MAX threads (auto), MAX ranks; 16 and 64 trees grown together.
run xmc forest-16 1 1 --algo forest --trees 16 $FW
for x in xmc xmc-base; do
  run $x forest-16 1 $MAX --algo forest --trees 16 $FW
  run $x forest-16-together 1 $MAX --algo forest --trees 16 --grow together $FW
done
run xmc forest-16 $MAX 1 --algo forest --trees 16 $FW
for x in xmc xmc-base; do run $x forest-64-together 1 $MAX --algo forest --trees 64 --grow together $FW; done
run xmc forest-64-alone 1 $MAX --algo forest --trees 64 --grow alone $FW
tar -C "$K" -czf "$O/summaries.tgz" s
