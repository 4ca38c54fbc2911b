#!/usr/bin/env bash
# Focused 16-thread runs: MEMOIR, PD-Sparse, forest grown together, for the
# binaries given, interleaved; results to OUT/results.tsv.
# Usage: focus.sh OUT BIN...  (the binaries and data/wordnet-mc/train.txt.gz
# beside the script, as for scale16.sh).
set -u
O=$1; K=/tmp/focus; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O" "$K/s"; shift
R=$O/results.tsv
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); p = s.get("profile") or []
f = max([(q["serial_s"]+q["collective_s"])/max(1e-9, q["serial_s"]+q["collective_s"]+q["busy_s"]) for q in p] or [0])
e = min([q["busy_s"]/max(1e-9, q["workers"]*q["loop_s"]) for q in p] or [1])
print("train_s %.3f\tserial_f %.4f\tloopE %.2f\tbusy %.1f" % (s["train_s"], f, e, sum(q["busy_s"] for q in p)))
PY
}
run() { local x=$1 n=$2; shift 2; local s=$K/s/$n.$x.json
  "$D/$x" train --threads 16 --checkpoint none --model-out $K/m "$@" --summary "$s" >"$K/s/$n.$x.log" 2>&1
  printf '%s\t%s\t%s\n' "$x" "$n" "$( [ -s "$s" ] && line "$s" || echo FAILED)" | tee -a "$R"; }
W=$K/wiki10
"$D/xmc" gen --n 25000 --d 101938 --l 30938 --labels 18.64 --features 673.4 --seed 1 --out "$W.all" >/dev/null
head -1 "$W.all" | awk '{print 20000, $2, $3}' > "$W.train"; sed -n '2,20001p' "$W.all" >> "$W.train"; rm "$W.all"
MC="--data $D/data/wordnet-mc/train.txt.gz"
for rep in 1; do for x in "$@"; do
  run $x memoir --algo memoir $MC
  run $x pdsparse --algo pdsparse $MC
  run $x forest-16-together --algo forest --trees 16 --grow together --data $W.train
done; done
