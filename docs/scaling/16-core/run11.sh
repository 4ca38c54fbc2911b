#!/usr/bin/env bash
# Run 11 (prepared 2026-11-26, second night): where PD-Sparse's rounds spend
# their time from 1 to MAX threads, from the trainer's figures in the summary
# (search, exchange, solve, apply, ms a round), for the build with the steps
# read in passes and the search's read-ahead (xmc, xmc-mpi) beside a51c5d6
# (xmc-prev, xmc-mpi-prev), the build before them; rounds of 16 rows, whose
# search this build splits by shares of the classes at MAX workers; then
# mpirun -np MAX, and MEMOIR at 1 and MAX threads as the node's yardstick.
# CPU profiles of this build at 1 and MAX threads (pd1.prof, pdMAX.prof) show
# where the CPU of MAX workers goes that one worker does not spend.
# Usage: run11.sh OUT MAX. Beside it: xmc, xmc-mpi, xmc-prev, xmc-mpi-prev
# (static and MPI builds), ompi.tgz (Debian's OpenMPI files), data/wordnet-mc.
set -u
O=$1; MAX=${2:-16}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv11; mkdir -p "$O" "$K/s"
R=$O/results.tsv; T0=$(date +%s)
{ nproc; lscpu | grep -E "Model name|MHz|NUMA|Socket|Thread|L3"; free -g | head -2; } > "$O/machine.txt" 2>&1
# One line a run: training time, P@1, the summary's serial fraction and loop
# efficiency (worst rank), and rank 0's round phases (the build before has none).
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); m = s.get("metrics", {}); p = s.get("profile") or []
f = max([(q["serial_s"]+q["collective_s"])/max(1e-9, q["serial_s"]+q["collective_s"]+q["busy_s"]) for q in p] or [0])
e = min([q["busy_s"]/max(1e-9, q["workers"]*q["loop_s"]) for q in p] or [1])
print("s %.3f\tP@1 %.2f\tserial_f %.4f\tloopE %.2f\tbusy %.2f" % (s.get("train_s") or 0, m.get("P@1", 0), f, e,
  sum(q["busy_s"] for q in p)))
PY
}
phases() { python3 -c 'import json, sys
t = (json.load(open(sys.argv[1])).get("trainer_stats") or [{}])[0]
print(" ".join("%s=%.3f" % (k[:-13], v) for k, v in sorted(t.items()) if k.endswith("_ms_per_round")))' "$1"; }
say() { printf '%s\t%s\t%s\n' "$1" "$(( $(date +%s) - T0 ))s" "$2" | tee -a "$R"; }
run() { # bin name ranks threads args...
  local x=$1 n=$2 r=$3 t=$4; shift 4; local s=$K/s/$n.$x.r$r.t$t.$(date +%s%N).json
  timeout 120 "$D/$x" train --ranks "$r" --threads "$t" --checkpoint none "$@" --summary "$s" >"$s.log" 2>&1
  say "$x $n r$r t$t" "$( [ -s "$s" ] && echo "$(line "$s")	$(phases "$s")" || echo FAILED)"
}
tar -C / --skip-old-files -xzf "$D/ompi.tgz" 2>>"$O/mpi.txt"; ldconfig 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=$(command -v orterun || command -v mpirun || echo /usr/bin/orterun)
mrun() { # bin name np args...
  local x=$1 n=$2 np=$3; shift 3; local s=$K/s/mpi-$n.$x.np$np.$(date +%s%N).json
  timeout 120 "$M" --oversubscribe --bind-to none -np "$np" "$D/$x" train --threads 1 --checkpoint none "$@" --summary "$s" >"$s.log" 2>&1
  say "mpi $x $n np$np" "$( [ -s "$s" ] && echo "$(line "$s")	$(phases "$s")" || echo FAILED)"; }
pack() { tar -C "$K" -czf "$O/summaries.tgz" s; }
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
T=1; while [ "$T" -lt "$MAX" ]; do TS="${TS:-} $T"; T=$((T * 2)); done; TS="$TS $MAX"
for t in $TS; do for x in xmc-prev xmc; do run $x pdsparse 1 "$t" --algo pdsparse $MC; done; done
pack
for t in 1 "$MAX"; do run xmc pdsparse-prof 1 "$t" --algo pdsparse $MC --cpuprofile "$O/pd$t.prof"; done
# Rounds of 16 rows: too few for MAX workers, whose rows this build splits
# into pieces of a share of the classes (searchParts), the build before not.
for x in xmc-prev xmc; do for t in 1 "$MAX"; do run $x pdsparse-b16 1 "$t" --algo pdsparse --batch-size 16 $MC; done; done
pack
for x in xmc-mpi-prev xmc-mpi; do mrun $x pdsparse "$MAX" --algo pdsparse $MC; done
for t in 1 "$MAX"; do run xmc memoir 1 "$t" --algo memoir $MC; done
pack
