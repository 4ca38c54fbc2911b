#!/usr/bin/env bash
# Run 27: every 16-core target of the scaling issue on the build of the day
# (xmc, xmc-mpi) against run 23's (xmc-prev, xmc-mpi-prev: 873be93), which
# the changes since were made to beat: PD-Sparse's steps applied in the loop
# that takes them, MEMOIR's block norms sent with the next round's reports,
# the forest's nodes dealt as numbered with idle builders helping and a
# rank's idle workers helping its last trees grown alone (and projecting
# their rows), a centroid's cut by selection on its magnitudes' bits,
# one-vs-all labels trained by the workers without a unit. First each
# trainer at one thread (the day's build), then its MAX-worker layouts (MAX
# threads, MAX in-process ranks of one thread, mpirun -np MAX) alternating
# the two builds twice, then 64 trees once each way, then 4 trees on MAX
# workers grown alone (each with helpers) and together, twice: whether
# --grow auto should grow fewer trees than workers alone where memory
# allows. Last, MAX copies of the one-thread PD-Sparse, DiSMEC and 16-tree forest
# runs at once (processes that share only the node): what MAX independent
# workers reach on each job, the ceiling its speedups are read against.
# PD-Sparse and MEMOIR on wordnet-mc, DiSMEC and
# PPDSparse on Delicious, the forest on the Wiki10-31K shape (generated
# here). A run that would start after BUDGET seconds is skipped, so that the
# script ends inside its call. One line a run (see line) with the model's
# md5, the same for both builds but where a trainer's numerics changed.
# Usage: run27.sh OUT [MAX, 16] [BUDGET, 480]. Beside it, as prep27.sh lays
# them out: the four binaries, ompi.tgz, data/wordnet-mc and data/delicious.
set -u
O=$1; MAX=${2:-16}; BUDGET=${3:-480}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv27; mkdir -p "$O" "$K/s"
R=$O/results.tsv; T0=$(date +%s)
{ nproc; lscpu | grep -E "Model name|MHz|NUMA|Socket|Thread|L3"; free -g | head -2; } > "$O/machine.txt" 2>&1
# One line a run: training time, P@1, and from the summary's profile the serial
# fraction (outside loops: serial part and collectives, the worst rank), the
# loops' efficiency (the worst rank), the peak RSS of the largest rank, the
# mean of the ranks' round phases, and the work done helping (trees, labels).
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); m = s.get("metrics", {}); p = s.get("profile") or []
f = max([(q["serial_s"]+q["collective_s"])/max(1e-9, q["serial_s"]+q["collective_s"]+q["busy_s"]) for q in p] or [0])
e = min([q["busy_s"]/max(1e-9, q["workers"]*q["loop_s"]) for q in p] or [1])
st = s.get("trainer_stats") or [{}]
ph = " ".join("%s=%.3f" % (k.replace("_ms_per_round", ""), sum(x.get(k, 0) for x in st)/len(st)) for k in sorted(st[0]) if k.endswith("_ms_per_round"))
h = " ".join("%s=%d" % (k, sum(x.get(k, 0) for x in st)) for k in sorted(st[0]) if k.endswith("_helping"))
print("s %.3f\tP@1 %.2f\tserial_f %.4f\tloopE %.2f\trss_MiB %d\t%s %s" % (s.get("train_s") or 0, m.get("P@1", 0), f, e,
  max(s.get("peak_rss_bytes") or [0]) >> 20, ph, h))
PY
}
elapsed() { echo $(( $(date +%s) - T0 )); }
say() { printf '%s\t%s\t%s\t%s\n' "$1" "$(elapsed)s" "$2" "$3" | tee -a "$R"; }
sum() { [ -s "$1" ] && md5sum < "$1" | cut -c1-12 || echo none; }
# limit prints the seconds a run may take (150 at most, the budget's rest and
# 40 more), or fails where the budget is spent.
limit() { local l=$(( BUDGET + 40 - $(elapsed) )); [ "$(elapsed)" -lt "$BUDGET" ] && echo $(( l < 150 ? l : 150 )); }
run() { # bin name ranks threads args...
  local x=$1 n=$2 r=$3 t=$4 l; shift 4; local s=$K/s/$n.$x.r$r.t$t.$(date +%s%N).json
  l=$(limit) || { say "$x $n r$r t$t" skipped -; return; }
  timeout "$l" "$D/$x" train --ranks "$r" --threads "$t" --checkpoint none "$@" --summary "$s" --model-out "$K/m" >"$s.log" 2>&1
  say "$x $n r$r t$t" "$( [ -s "$s" ] && line "$s" || echo FAILED)" "$(sum "$K/m")"; rm -f "$K/m"; }
tar -C / --skip-old-files -xzf "$D/ompi.tgz" 2>>"$O/mpi.txt"; ldconfig 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=$(command -v mpirun || command -v orterun || echo /usr/bin/orterun)
mrun() { # bin name np args...
  local x=$1 n=$2 np=$3 l; shift 3; local s=$K/s/mpi-$n.$x.np$np.$(date +%s%N).json
  l=$(limit) || { say "mpi $x $n np$np" skipped -; return; }
  timeout "$l" "$M" --oversubscribe --bind-to none -np "$np" "$D/$x" train --threads 1 --checkpoint none "$@" \
    --summary "$s" --model-out "$K/m" >"$s.log" 2>&1
  say "mpi $x $n np$np" "$( [ -s "$s" ] && line "$s" || echo FAILED)" "$(sum "$K/m")"; rm -f "$K/m"; }
pack() { tar -C "$K" -czf "$O/summaries.tgz" s; }
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
DL="--data $D/data/delicious/train.txt --test $D/data/delicious/test.txt"
W=$K/wiki10
"$D/xmc" gen --n 25000 --d 101938 --l 30938 --labels 18.64 --features 673.4 --seed 1 --out "$W.all" >/dev/null
head -1 "$W.all" | awk '{print 20000, $2, $3}' > "$W.train"; sed -n '2,20001p' "$W.all" >> "$W.train"; rm "$W.all"
FO="--data $W.train"
# One thread, the day's build: the speedups' base.
for a in pdsparse memoir; do run xmc $a 1 1 --algo $a $MC; done
for a in dismec ppdsparse; do run xmc $a 1 1 --algo $a $DL; done
run xmc forest16 1 1 --algo forest $FO --trees 16
pack
# MAX workers, each build in turn, twice. x and xm name the builds.
layouts() { # x xm name args...: MAX threads, MAX ranks in process, mpirun -np MAX
  local x=$1 xm=$2 n=$3; shift 3
  run "$x" "$n" 1 "$MAX" "$@"; run "$x" "$n" "$MAX" 1 "$@"; mrun "$xm" "$n" "$MAX" "$@"; }
for k in 1 2; do
  for p in prev day; do
    x=xmc; xm=xmc-mpi; [ $p = prev ] && x=xmc-prev xm=xmc-mpi-prev
    for a in pdsparse memoir; do layouts $x $xm $a --algo $a $MC; done
    for a in dismec ppdsparse; do run $x $a 1 "$MAX" --algo $a $DL; done
    run $x forest16 1 "$MAX" --algo forest $FO --trees 16
    run $x forest16-together 1 "$MAX" --algo forest $FO --trees 16 --grow together
  done
  pack
done
# 64 trees (one thread not run: their speedup is against four times 16 trees').
for p in prev day; do
  x=xmc; [ $p = prev ] && x=xmc-prev
  for g in auto together; do run $x forest64-$g 1 "$MAX" --algo forest $FO --trees 64 --grow $g; done
done
pack
# Fewer trees than workers: 4 trees, the day's build, alone and together.
for k in 1 2; do for g in alone together; do run xmc forest4-$g 1 "$MAX" --algo forest $FO --trees 4 --grow $g; done; done
pack
# MAX copies of a one-thread run at once: each copy's time against the
# one-thread run above is how much slower a core works with MAX at once.
copies() { # name args...
  local n=$1 l i; shift
  l=$(limit) || { say "copies xmc $n x$MAX" skipped -; return; }
  for i in $(seq "$MAX"); do
    timeout "$l" "$D/xmc" train --ranks 1 --threads 1 --checkpoint none "$@" --summary "$K/s/copy-$n.$i.json" \
      --model-out "$K/copy$i.m" >"$K/s/copy-$n.$i.log" 2>&1 &
  done
  wait
  for i in $(seq "$MAX"); do
    say "copies xmc $n c$i/$MAX" "$( [ -s "$K/s/copy-$n.$i.json" ] && line "$K/s/copy-$n.$i.json" || echo FAILED)" "$(sum "$K/copy$i.m")"
  done
  rm -f "$K"/copy*.m; }
copies pdsparse --algo pdsparse $MC
copies dismec --algo dismec $DL
copies forest16 --algo forest $FO --trees 16
pack
