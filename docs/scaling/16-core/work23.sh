#!/usr/bin/env bash
# Each layout's work against one thread's (xmc-bench's "work ×": the time
# the ranks and workers spent computing, in loops and alone) in run
# 23's summaries, the day's build (873be93): per trainer, xmc-bench report
# over its in-process runs (one thread, 16 threads, 16 ranks), then the same
# ratio for its mpirun -np 16 runs, which report leaves out (another
# backend), against the same one-thread run.
# Usage: work23.sh [XMC_BENCH, bin/xmc-bench] (from the repository root).
set -euo pipefail
B=${1:-bin/xmc-bench}; W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
tar -C "$W" -xzf docs/scaling/16-core/run23-summaries.tgz
for a in dismec ppdsparse forest16 pdsparse memoir; do
  mkdir "$W/$a"; cp "$W"/s/$a.xmc.r*.json "$W/$a/"
  echo "== $a, in process"
  "$B" report --out "$W/$a.out" "$W/$a" 2>&1 | grep -E "^ *(layout|[0-9]+x[0-9]+) "
  echo "== $a, mpirun -np 16 (against the one-thread run)"
  python3 - "$W/$a" "$W"/s/mpi-$a.xmc-mpi.np16.*.json <<'PY'
import glob, json, sys
work = lambda s: sum(p["busy_s"] + p["serial_s"] for p in s["profile"])
# As xmc-bench computes them: the lowest rank's loop efficiency, and the
# largest rank's time outside loops over it and every rank's busy time.
loopE = lambda s: min(p["busy_s"] / (p["workers"] * p["loop_s"]) if p["loop_s"] else 1 for p in s["profile"])
def serialF(s):
    out = max(p["serial_s"] + p["collective_s"] for p in s["profile"])
    return out / (out + sum(p["busy_s"] for p in s["profile"]))
one = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/*.json")]
one = [s for s in one if s["ranks"] == 1 and s["threads_per_rank"] == 1][0]
for f in sys.argv[2:]:
    s = json.load(open(f))
    print("  np16  train_s %.3f  speedup %.2f  loop E %.2f  work × %.2f  serial f %.4f" % (s["train_s"],
        one["train_s"] / s["train_s"], loopE(s), work(s) / work(one), serialF(s)))
PY
done
