#!/usr/bin/env bash
# Run 26: a forest on MAX threads, xmc (b90f279: nodes dealt as numbered,
# idle builders helping large nodes, k-means updates summed on the helpers,
# idle workers helping the last trees grown alone) against xmc-prev
# (f4eb17c: a level at a time, no help), alternating: grown together, 16
# trees three times and 64 trees twice; grown alone, 16 trees twice and 64
# trees twice; then 16 trees at one thread (xmc) for the speedup. Data: the Wiki10-31K
# shape, generated here. Runs that would start after BUDGET seconds are
# skipped. One line a run, with the model's md5 (the same for both builds).
# Usage: run26.sh OUT [MAX, 16] [BUDGET, 400]. Beside it, as prep26.sh lays
# them out: xmc and xmc-prev.
set -u
O=$1; MAX=${2:-16}; BUDGET=${3:-400}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv26; mkdir -p "$O" "$K/s"
R=$O/results.tsv; T0=$(date +%s)
nproc > "$O/machine.txt"
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); p = (s.get("profile") or [{}])[0]
w, loop = p.get("workers", 1), p.get("loop_s", 0) or 1e-9
h = (s.get("trainer_stats") or [{}])[0].get("nodes_split_helping", "-")
print("s %.3f\tserial_s %.3f\tloop_E %.3f\thelped %s" % (s.get("train_s") or 0, p.get("serial_s", 0), p.get("busy_s", 0) / w / loop, h))
PY
}
say() { printf '%s\t%s\t%s\t%s\n' "$1" "$(( $(date +%s) - T0 ))s" "$2" "$3" | tee -a "$R"; }
sum() { [ -s "$1" ] && md5sum < "$1" | cut -c1-12 || echo none; }
[ -s "$K/train.txt" ] || { "$D/xmc" gen --n 25000 --d 101938 --l 30938 --labels 18.64 --features 673.4 --seed 1 --out "$K/full.txt" &&
  { head -1 "$K/full.txt" | awk '{print 20000, $2, $3}'; sed -n 2,20001p "$K/full.txt"; } > "$K/train.txt"; }
run() { # BIN TREES GROW THREADS
  n="$1 trees$2 $3 t$4"
  [ $(( $(date +%s) - T0 )) -lt "$BUDGET" ] || { say "$n" skipped -; return; }
  s=$K/s/$1.$2.$3.$4.$(date +%s%N).json
  timeout 120 "$D/$1" train --algo forest --data "$K/train.txt" --trees "$2" --grow "$3" --threads "$4" \
    --checkpoint none --summary "$s" --model-out "$K/m" >"$s.log" 2>&1
  say "$n" "$( [ -s "$s" ] && line "$s" || echo FAILED)" "$(sum "$K/m")"; rm -f "$K/m"; }
for k in 1 2 3; do for b in xmc-prev xmc; do run $b 16 together "$MAX"; done; done
for k in 1 2; do for b in xmc-prev xmc; do run $b 64 together "$MAX"; done; done
for k in 1 2; do for b in xmc-prev xmc; do run $b 16 alone "$MAX"; done; done
for k in 1 2; do for b in xmc-prev xmc; do run $b 64 alone "$MAX"; done; done
run xmc 16 together 1
tar -C "$K" -czf "$O/summaries.tgz" s
