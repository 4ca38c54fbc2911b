#!/usr/bin/env bash
# Run 6 of docs/scaling/16-core.md: the builds v0 (ca558ee), v1 (PD-Sparse's shard cuts and
# affinity, merged reports, spin-wait hints) and v2 (v1, members always
# spinning between loops) at MAX threads, interleaved, against 1 thread of
# v1 in the same run; ranks in process and under mpirun.
# Usage: run6.sh OUT MAX (all results under OUT). Beside it: the static builds
# xmc (v0), xmc-v1, xmc-v2, the MPI build xmc-mpi-v1, ompi.tgz and
# data/wordnet-mc.
set -u
O=$1; MAX=${2:-16}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv2; mkdir -p "$O" "$K/s" "$K/p"
R=$O/results.tsv; T0=$(date +%s)
{ nproc; lscpu | grep -E "Model name|MHz|NUMA|Socket|Thread|L3"; } > "$O/machine.txt" 2>&1
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); m = s.get("metrics", {}); p = s.get("profile") or []
f = max([(q["serial_s"]+q["collective_s"])/max(1e-9, q["serial_s"]+q["collective_s"]+q["busy_s"]) for q in p] or [0])
e = min([q["busy_s"]/max(1e-9, q["workers"]*q["loop_s"]) for q in p] or [1])
print("s %.3f\tP@1 %.2f\tserial_f %.4f\tloopE %.2f\tbusy %.2f\tserial_s %.2f\tcoll_s %.2f" % (s.get("train_s") or 0, m.get("P@1", 0), f, e,
  sum(q["busy_s"] for q in p), sum(q["serial_s"] for q in p), sum(q["collective_s"] for q in p)))
PY
}
say() { printf '%s\t%s\t%s\n' "$1" "$(( $(date +%s) - T0 ))s" "$2" | tee -a "$R"; }
run() { # bin name ranks threads profile(0/1) args...
  local x=$1 n=$2 r=$3 t=$4 pf=$5; shift 5; local s=$K/s/$n.$x.r$r.t$t.json pa=()
  [ "$pf" = 1 ] && pa=(--cpuprofile "$K/p/$n.$x.r$r.t$t.prof")
  timeout 100 "$D/$x" train --ranks "$r" --threads "$t" --checkpoint none "${pa[@]}" "$@" --summary "$s" >"$K/s/$n.$x.r$r.t$t.log" 2>&1
  say "$x $n r$r t$t" "$( [ -s "$s" ] && line "$s" || echo FAILED)"
}
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
W=$K/wiki10
"$D/xmc-v1" gen --n 25000 --d 101938 --l 30938 --labels 18.64 --features 673.4 --seed 1 --out "$W.all" >/dev/null
head -1 "$W.all" | awk '{print 20000, $2, $3}' > "$W.train"; sed -n '2,20001p' "$W.all" >> "$W.train"; rm "$W.all"
FW="--algo forest --trees 16 --data $W.train --model-out $K/m.model"
run xmc-v1 pdsparse 1 1 0 --algo pdsparse $MC
for rep in 1 2; do for x in xmc xmc-v1 xmc-v2; do run $x pdsparse 1 $MAX $(( rep == 1 )) --algo pdsparse $MC; done; done
for rep in 1 2; do for x in xmc xmc-v1 xmc-v2; do run $x memoir 1 $MAX $(( rep == 1 )) --algo memoir $MC; done; done
run xmc-v1 memoir 1 1 0 --algo memoir $MC
for rep in 1 2; do for x in xmc xmc-v1 xmc-v2; do run $x forest16-together 1 $MAX 0 --grow together $FW; done; done
run xmc-v2 forest16-auto 1 $MAX 0 $FW
run xmc-v1 forest16 1 1 0 $FW
tar -C "$K" -czf "$O/profiles.tgz" p s
for x in xmc xmc-v1; do run $x pdsparse $MAX 1 0 --algo pdsparse $MC; done
run xmc-v1 memoir $MAX 1 0 --algo memoir $MC
# Under mpirun, with OpenMPI's Debian files unpacked (none overwritten).
tar -C / --skip-old-files -xzf "$D/ompi.tgz" 2>>"$O/mpi.txt"; ldconfig
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mrun() { local x=$1 n=$2 np=$3 t=$4; shift 4; local s=$K/s/mpi-$n.$x.np$np.t$t.json
  timeout 100 /usr/bin/orterun --oversubscribe --bind-to none -np "$np" "$D/$x" train --threads "$t" --checkpoint none "$@" --summary "$s" >"$K/s/mpi-$n.$x.np$np.t$t.log" 2>&1
  say "mpi $x $n np$np t$t" "$( [ -s "$s" ] && line "$s" || echo FAILED)"; }
mrun xmc-mpi-v1 pdsparse $MAX 1 --algo pdsparse $MC
mrun xmc-mpi-v1 pdsparse 4 4 --algo pdsparse $MC
mrun xmc-mpi-v1 memoir $MAX 1 --algo memoir $MC
tar -C "$K" -czf "$O/profiles.tgz" p s
