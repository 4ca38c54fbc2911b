#!/usr/bin/env bash
# Run 8 (2026-11-26, build 5b9199f): every 16-core target of the scaling issue
# for the build of the day, each speedup against 1 thread in the same run.
# PD-Sparse and MEMOIR at MAX threads, MAX in-process ranks and mpirun -np MAX
# (first, twice, and beside xmc-prev = e9d1b12, the build before the ranks'
# repeated work was cut); one-vs-all on Delicious; the forest of 16 and 64
# trees on the Wiki10-31K shape, --grow auto and together.
# Usage: run8.sh OUT MAX. Beside it: xmc (static), xmc-mpi (MPI build),
# xmc-prev, xmc-mpi-prev, ompi.tgz (Debian's OpenMPI files), data/wordnet-mc
# and data/delicious.
set -u
O=$1; MAX=${2:-16}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv8; mkdir -p "$O" "$K/s"
R=$O/results.tsv; T0=$(date +%s)
{ nproc; lscpu | grep -E "Model name|MHz|NUMA|Socket|Thread|L3"; free -g | head -2; } > "$O/machine.txt" 2>&1
# One line a run: training time, P@1, and from the summary's profile the serial
# fraction (outside loops: serial part and collectives, the worst rank) and the
# loops' efficiency (busy over workers × loop time, the worst rank).
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); m = s.get("metrics", {}); p = s.get("profile") or []
f = max([(q["serial_s"]+q["collective_s"])/max(1e-9, q["serial_s"]+q["collective_s"]+q["busy_s"]) for q in p] or [0])
e = min([q["busy_s"]/max(1e-9, q["workers"]*q["loop_s"]) for q in p] or [1])
print("s %.3f\tP@1 %.2f\tserial_f %.4f\tloopE %.2f\tbusy %.2f\tserial_s %.2f\tcoll_s %.2f\trss_MiB %d" % (s.get("train_s") or 0,
  m.get("P@1", 0), f, e, sum(q["busy_s"] for q in p), sum(q["serial_s"] for q in p), sum(q["collective_s"] for q in p),
  max(s.get("peak_rss_bytes") or [0]) >> 20))
PY
}
say() { printf '%s\t%s\t%s\n' "$1" "$(( $(date +%s) - T0 ))s" "$2" | tee -a "$R"; }
run() { # bin name ranks threads args...
  local x=$1 n=$2 r=$3 t=$4; shift 4; local s=$K/s/$n.$x.r$r.t$t.$(date +%s%N).json
  timeout 120 "$D/$x" train --ranks "$r" --threads "$t" --checkpoint none "$@" --summary "$s" >"$s.log" 2>&1
  say "$x $n r$r t$t" "$( [ -s "$s" ] && line "$s" || echo FAILED)"
}
tar -C / --skip-old-files -xzf "$D/ompi.tgz" 2>>"$O/mpi.txt"; ldconfig
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=$(command -v orterun || echo /usr/bin/orterun)
mrun() { # bin name np args...
  local x=$1 n=$2 np=$3; shift 3; local s=$K/s/mpi-$n.$x.np$np.$(date +%s%N).json
  timeout 120 "$M" --oversubscribe --bind-to none -np "$np" "$D/$x" train --threads 1 --checkpoint none "$@" --summary "$s" >"$s.log" 2>&1
  say "mpi $x $n np$np" "$( [ -s "$s" ] && line "$s" || echo FAILED)"; }
pack() { tar -C "$K" -czf "$O/summaries.tgz" s; }
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
DL="--data $D/data/delicious/train.txt --test $D/data/delicious/test.txt"
# The trainers of rounds: 16 workers as threads, in-process ranks and MPI ranks, then 1 thread.
for a in pdsparse memoir; do
  run xmc $a 1 "$MAX" --algo $a $MC
  run xmc $a "$MAX" 1 --algo $a $MC
  mrun xmc-mpi $a "$MAX" --algo $a $MC
  run xmc $a 1 1 --algo $a $MC
done
pack
# One-vs-all on Delicious.
for a in dismec ppdsparse; do run xmc $a 1 1 --algo $a $DL; run xmc $a 1 "$MAX" --algo $a $DL; done
# The forest on the Wiki10-31K shape (20,000 rows to train).
W=$K/wiki10
"$D/xmc" gen --n 25000 --d 101938 --l 30938 --labels 18.64 --features 673.4 --seed 1 --out "$W.all" >/dev/null
head -1 "$W.all" | awk '{print 20000, $2, $3}' > "$W.train"; sed -n '2,20001p' "$W.all" >> "$W.train"; rm "$W.all"
F="--algo forest --data $W.train --model-out $K/f.model"
run xmc forest16 1 1 --trees 16 $F
run xmc forest16-auto 1 "$MAX" --trees 16 --grow auto $F
run xmc forest16-together 1 "$MAX" --trees 16 --grow together $F
run xmc forest64-auto 1 "$MAX" --trees 64 --grow auto $F
run xmc forest64-together 1 "$MAX" --trees 64 --grow together $F
pack
# Repeats of the 16-worker rounds, beside the build before.
for a in pdsparse memoir; do
  for x in xmc-prev xmc; do run $x $a 1 "$MAX" --algo $a $MC; run $x $a "$MAX" 1 --algo $a $MC; done
  for x in xmc-mpi-prev xmc-mpi; do mrun $x $a "$MAX" --algo $a $MC; done
done
pack
