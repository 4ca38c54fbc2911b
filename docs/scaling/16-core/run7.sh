#!/usr/bin/env bash
# Run 7 (prepared on 2026-11-26 and tried on the 2-core VM as run7.sh OUT 2, not yet run on a
# 16-core node): the rounds'
# exchange by Allgatherv (xmc, xmc-mpi = 8d9d4a0 and later) against the
# Gatherv + Bcast of e9d1b12 (xmc-prev, xmc-mpi-prev), and numa.Team.For's
# loop end (e9d1b12) against 602068d (xmc-old), at MAX threads or ranks,
# interleaved, against 1 thread in the same run. Built from 32a3e2f or later,
# xmc's MEMOIR also deals a round's search by (row, block) pair, which its
# runs at MAX threads against xmc-prev measure.
# Usage: run7.sh OUT MAX. Beside it: xmc, xmc-prev, xmc-old (static),
# xmc-mpi, xmc-mpi-prev (MPI builds), ompi.tgz and data/wordnet-mc.
set -u
O=$1; MAX=${2:-16}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv7; mkdir -p "$O" "$K/s"
R=$O/results.tsv; T0=$(date +%s)
{ nproc; lscpu | grep -E "Model name|MHz|NUMA|Socket|Thread|L3"; } > "$O/machine.txt" 2>&1
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); m = s.get("metrics", {}); p = s.get("profile") or []
c = [q["collective_s"] for q in p]; b = [q["busy_s"] for q in p]
print("s %.3f\tP@1 %.2f\tbusy max %.2f mean %.2f\tcoll min %.2f max %.2f\tserial max %.2f" % (s.get("train_s") or 0,
  m.get("P@1", 0), max(b or [0]), sum(b)/max(1, len(b)), min(c or [0]), max(c or [0]), max([q["serial_s"] for q in p] or [0])))
PY
}
say() { printf '%s\t%s\t%s\n' "$1" "$(( $(date +%s) - T0 ))s" "$2" | tee -a "$R"; }
run() { # bin name ranks threads args...
  local x=$1 n=$2 r=$3 t=$4; shift 4; local s=$K/s/$n.$x.r$r.t$t.json
  timeout 100 "$D/$x" train --ranks "$r" --threads "$t" --checkpoint none "$@" --summary "$s" >"$K/s/$n.$x.r$r.t$t.log" 2>&1
  say "$x $n r$r t$t" "$( [ -s "$s" ] && line "$s" || echo FAILED)"
}
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
# Under mpirun first: the exchange's collectives are what 16 ranks waited on (run 6).
tar -C / --skip-old-files -xzf "$D/ompi.tgz" 2>>"$O/mpi.txt"; ldconfig
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=$(command -v orterun || echo /usr/bin/orterun)
mrun() { local x=$1 n=$2 np=$3; shift 3; local s=$K/s/mpi-$n.$x.np$np.json
  timeout 100 "$M" --oversubscribe --bind-to none -np "$np" "$D/$x" train --threads 1 --checkpoint none "$@" --summary "$s" >"$K/s/mpi-$n.$x.np$np.log" 2>&1
  say "mpi $x $n np$np" "$( [ -s "$s" ] && line "$s" || echo FAILED)"; }
for rep in 1 2; do for x in xmc-mpi-prev xmc-mpi; do mrun $x pdsparse $MAX --algo pdsparse $MC; done; done
for rep in 1 2; do for x in xmc-mpi-prev xmc-mpi; do mrun $x memoir $MAX --algo memoir $MC; done; done
# In process: ranks, then threads (Team.For against the build before it).
for x in xmc-prev xmc; do run $x pdsparse $MAX 1 --algo pdsparse $MC; done
for x in xmc-prev xmc; do run $x memoir $MAX 1 --algo memoir $MC; done
for rep in 1 2; do for x in xmc-old xmc-prev xmc; do run $x pdsparse 1 $MAX --algo pdsparse $MC; done; done
for rep in 1 2; do for x in xmc-old xmc-prev xmc; do run $x memoir 1 $MAX --algo memoir $MC; done; done
run xmc pdsparse 1 1 --algo pdsparse $MC
run xmc memoir 1 1 --algo memoir $MC
tar -C "$K" -czf "$O/summaries.tgz" s
