#!/usr/bin/env bash
# Run 23 (prepared 2026-11-28, not yet run: no machine lent): PD-Sparse and
# MEMOIR on wordnet-mc at MAX threads, MAX in-process ranks of one thread and
# mpirun -np MAX, the build of the day (xmc, xmc-mpi: each rank solves or
# decides a share of a round's rows, the reports by all-to-all, PD-Sparse's
# active sets by home and owner, MEMOIR's keys once a run) against xmc-prev,
# xmc-mpi-prev (1bb9671, before them), alternating twice; then the build of
# the day at one thread. Prints one line a run (see line) and the model's md5,
# the same for every run of a trainer.
# Usage: run23.sh OUT [MAX, 16]. Beside it, as prep23.sh lays them out: the
# four binaries, ompi.tgz (Debian's OpenMPI files) and data/wordnet-mc.
# About 4 minutes on a 16-core node, by the trial here at MAX 2 (13 minutes,
# every run complete, one md5 a trainer).
set -u
O=$1; MAX=${2:-16}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv23; mkdir -p "$O" "$K/s"
R=$O/results.tsv; T0=$(date +%s)
{ nproc; lscpu | grep -E "Model name|MHz|NUMA|Socket|Thread|L3"; free -g | head -2; } > "$O/machine.txt" 2>&1
# One line a run: training time, P@1, and from the summary's profile the serial
# fraction (outside loops: serial part and collectives, the worst rank), the
# loops' efficiency (the worst rank), and the mean of the ranks' round phases.
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); m = s.get("metrics", {}); p = s.get("profile") or []
f = max([(q["serial_s"]+q["collective_s"])/max(1e-9, q["serial_s"]+q["collective_s"]+q["busy_s"]) for q in p] or [0])
e = min([q["busy_s"]/max(1e-9, q["workers"]*q["loop_s"]) for q in p] or [1])
st = s.get("trainer_stats") or [{}]
ph = " ".join("%s=%.3f" % (k.replace("_ms_per_round", ""), sum(x[k] for x in st)/len(st)) for k in sorted(st[0]) if k.endswith("_ms_per_round"))
print("s %.3f\tP@1 %.2f\tserial_f %.4f\tloopE %.2f\t%s" % (s.get("train_s") or 0, m.get("P@1", 0), f, e, ph))
PY
}
say() { printf '%s\t%s\t%s\t%s\n' "$1" "$(( $(date +%s) - T0 ))s" "$2" "$3" | tee -a "$R"; }
sum() { [ -s "$1" ] && md5sum < "$1" | cut -c1-12 || echo none; }
run() { # bin name ranks threads args...
  local x=$1 n=$2 r=$3 t=$4; shift 4; local s=$K/s/$n.$x.r$r.t$t.$(date +%s%N).json
  timeout 150 "$D/$x" train --ranks "$r" --threads "$t" --checkpoint none "$@" --summary "$s" --model-out "$K/m" >"$s.log" 2>&1
  say "$x $n r$r t$t" "$( [ -s "$s" ] && line "$s" || echo FAILED)" "$(sum "$K/m")"; rm -f "$K/m"; }
tar -C / --skip-old-files -xzf "$D/ompi.tgz" 2>>"$O/mpi.txt"; ldconfig 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=$(command -v mpirun || command -v orterun || echo /usr/bin/orterun)
mrun() { # bin name np args...
  local x=$1 n=$2 np=$3; shift 3; local s=$K/s/mpi-$n.$x.np$np.$(date +%s%N).json
  timeout 150 "$M" --oversubscribe --bind-to none -np "$np" "$D/$x" train --threads 1 --checkpoint none "$@" \
    --summary "$s" --model-out "$K/m" >"$s.log" 2>&1
  say "mpi $x $n np$np" "$( [ -s "$s" ] && line "$s" || echo FAILED)" "$(sum "$K/m")"; rm -f "$K/m"; }
pack() { tar -C "$K" -czf "$O/summaries.tgz" s; }
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
for k in 1 2; do for a in pdsparse memoir; do
  for p in prev day; do
    x=xmc; xm=xmc-mpi; [ $p = prev ] && x=xmc-prev xm=xmc-mpi-prev
    run $x $a "$MAX" 1 --algo $a $MC
    mrun $xm $a "$MAX" --algo $a $MC
    run $x $a 1 "$MAX" --algo $a $MC
  done
done; pack; done
for a in pdsparse memoir; do run xmc $a 1 1 --algo $a $MC; done
pack
