#!/usr/bin/env bash
# Run 10 (2026-11-26): in-process ranks after the change of run 9 (xmc-new:
# collectives that park, one-worker loops handed to the worker, the rounds on
# the rank's goroutine) against the build before (xmc-dbg with no knob set)
# at 2, 4 and 8 ranks of one thread (PD-Sparse, 3 epochs); then xmc-new at 16
# ranks against 1 thread in the same run (PD-Sparse whole, MEMOIR 1 epoch),
# and mpirun -np MAX. Usage: run10.sh OUT MAX
set -u
O=$1; MAX=${2:-16}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv10; mkdir -p "$O" "$K/s"
R=$O/results.tsv; T0=$(date +%s)
say() { printf '%s\t%s\t%s\n' "$1" "$(( $(date +%s) - T0 ))s" "$2" | tee -a "$R"; }
ts() { python3 -c "import json,sys;s=json.load(open(sys.argv[1]));p=s.get('profile') or [];print('s %.3f P@1 %.2f coll %.1f serial %.1f busy %.1f' % (s['train_s'], s.get('metrics',{}).get('P@1',0), sum(q['collective_s'] for q in p), sum(q['serial_s'] for q in p), sum(q['busy_s'] for q in p)))" "$1"; }
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
run() { local x=$1 r=$2 t=$3; shift 3; local s=$K/s/$x.r$r.t$t.$(date +%s%N).json
  timeout 60 "$D/$x" train --ranks "$r" --threads "$t" --checkpoint none "$@" $MC --summary "$s" >"$s.log" 2>&1
  say "$x r$r t$t $*" "$( [ -s "$s" ] && ts "$s" || echo FAILED)"; }
tar -C / --skip-old-files -xzf "$D/ompi.tgz" 2>/dev/null; ldconfig
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=$(command -v orterun || echo /usr/bin/orterun)
for r in 2 4 8; do for x in xmc-dbg xmc-new; do run $x $r 1 --algo pdsparse --epochs 3; done; done
run xmc-new "$MAX" 1 --algo pdsparse
run xmc-new 1 1 --algo pdsparse
s=$K/s/mpi.$(date +%s%N).json
timeout 60 "$M" --oversubscribe --bind-to none -np "$MAX" "$D/xmc-mpi" train --threads 1 --checkpoint none --algo pdsparse $MC --summary "$s" >"$s.log" 2>&1
say "mpirun np$MAX pdsparse" "$( [ -s "$s" ] && ts "$s" || echo FAILED)"
run xmc-new "$MAX" 1 --algo memoir --epochs 1
run xmc-dbg "$MAX" 1 --algo memoir --epochs 1
run xmc-new 1 1 --algo memoir --epochs 1
tar -C "$K" -czf "$O/summaries.tgz" s
