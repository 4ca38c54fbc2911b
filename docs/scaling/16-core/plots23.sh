#!/usr/bin/env bash
# Run 23's tables and plots, a study per trainer and their overview, from its summaries (the day's build, 873be93;
# ranks in process): xmc-bench report over one directory per trainer, each holding its one-thread run and its
# 16-worker runs (16 threads, 16 ranks of one thread). The forest grown together shares the one-thread run of the
# forest grown a tree per worker: with one worker the two are the same run. The `mpirun -np 16` runs are another
# backend, which report leaves out (work23.sh sets them against the one-thread run).
# The studies' plots are kept as SVG only (the overview also as PNG), to keep the repository small.
# Usage: plots23.sh [XMC_BENCH, bin/xmc-bench] [OUT, docs/scaling/16-core/run23] (from the repository root).
set -euo pipefail
B=${1:-bin/xmc-bench} OUT=${2:-docs/scaling/16-core/run23}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
tar -C "$W" -xzf docs/scaling/16-core/run23-summaries.tgz
for a in dismec ppdsparse forest16 forest16-together pdsparse memoir; do
  mkdir "$W/$a"; cp "$W"/s/$a.xmc.r*.json "$W/$a/"
done
cp "$W"/s/forest16.xmc.r1.t1.*.json "$W/forest16-together/"
rm -rf "$OUT"
"$B" report --out "$OUT" "$W"/{dismec,ppdsparse,forest16,forest16-together,pdsparse,memoir}
rm -f "$OUT"/*/*.png
