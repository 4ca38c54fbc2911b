#!/usr/bin/env bash
# Run 5 of docs/scaling/16-core.md: where the time of each trainer goes at MAX threads against
# 1 thread (CPU profiles of both), the real-N Amazon-670K forest's
# prediction per row per core, and PD-Sparse under a carried OpenMPI.
# Usage: run5.sh OUT MAX AZ_N (all results under OUT). Beside it: xmc (a static
# build), xmc-mpi (the MPI build), ompi.tgz (the files of Debian's OpenMPI
# packages, for a machine without them) and data/{delicious,wordnet-mc}.
set -u
O=$1; MAX=${2:-16}; AZN=${3:-643474}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv1; mkdir -p "$O" "$K/s" "$K/p"
X=$D/xmc; R=$O/results.tsv; T0=$(date +%s)
{ nproc; lscpu | grep -E "Model name|MHz|NUMA|Socket|Thread|L3"; free -g | head -2; cat /sys/fs/cgroup/cpu.max 2>/dev/null; cat /etc/os-release | head -2; } > "$O/machine.txt" 2>&1
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); m = s.get("metrics", {}); p = s.get("profile") or []
f = max([(q["serial_s"]+q["collective_s"])/max(1e-9, q["serial_s"]+q["collective_s"]+q["busy_s"]) for q in p] or [0])
e = min([q["busy_s"]/max(1e-9, q["workers"]*q["loop_s"]) for q in p] or [1])
t = s.get("train_s") or s.get("predict_s") or 0
print("s %.3f\tP@1 %.2f\tserial_f %.4f\tloopE %.2f\tbusy %.2f\tserial_s %.2f\tcoll_s %.2f\trss_MiB %d" % (t, m.get("P@1", 0), f, e,
  sum(q["busy_s"] for q in p), sum(q["serial_s"] for q in p), sum(q["collective_s"] for q in p), max(s.get("peak_rss_bytes") or [0]) >> 20))
PY
}
say() { printf '%s\t%s\t%s\n' "$1" "$(( $(date +%s) - T0 ))s" "$2" | tee -a "$R"; }
run() { # name ranks threads profile(0/1) args...
  local n=$1 r=$2 t=$3 pf=$4; shift 4; local s=$K/s/$n.r$r.t$t.json pa=()
  [ "$pf" = 1 ] && pa=(--cpuprofile "$K/p/$n.r$r.t$t.prof")
  timeout 120 "$X" train --ranks "$r" --threads "$t" --checkpoint none "${pa[@]}" "$@" --summary "$s" >"$K/s/$n.r$r.t$t.log" 2>&1
  say "$n r$r t$t" "$( [ -s "$s" ] && line "$s" || echo FAILED)"
}
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
DL="--data $D/data/delicious/train.txt --test $D/data/delicious/test.txt"
W=$K/wiki10
"$X" gen --n 25000 --d 101938 --l 30938 --labels 18.64 --features 673.4 --seed 1 --out "$W.all" >/dev/null
head -1 "$W.all" | awk '{print 20000, $2, $3}' > "$W.train"; sed -n '2,20001p' "$W.all" >> "$W.train"; rm "$W.all"
# Trainers of rounds: profiles at 1 and MAX threads; ranks; batch sizes.
run pdsparse 1 1 1 --algo pdsparse $MC
run pdsparse 1 $MAX 1 --algo pdsparse $MC
run pdsparse $MAX 1 0 --algo pdsparse $MC
run pdsparse-b256 1 $MAX 0 --algo pdsparse --batch-size 256 $MC
run pdsparse-b1024 1 $MAX 0 --algo pdsparse --batch-size 1024 $MC
run memoir 1 $MAX 1 --algo memoir $MC
run memoir 1 1 1 --algo memoir $MC
run memoir $MAX 1 0 --algo memoir $MC
# Forest grown together and one-vs-all: profiles at 1 and MAX threads.
run forest16-together 1 $MAX 1 --algo forest --trees 16 --grow together --data $W.train --model-out $K/m.model
run forest16 1 1 1 --algo forest --trees 16 --data $W.train --model-out $K/m.model
run forest16-auto 1 $MAX 0 --algo forest --trees 16 --data $W.train --model-out $K/m.model
run dismec 1 1 1 --algo dismec $DL
run dismec 1 $MAX 1 --algo dismec $DL
run ppdsparse 1 1 0 --algo ppdsparse $DL
run ppdsparse 1 $MAX 0 --algo ppdsparse $DL
tar -C "$K" -czf "$O/profiles.tgz" p s
# Real-N Amazon-670K forest: bytes a tree, prediction per row per core.
A=$K/az; mkdir -p "$A"
"$X" gen --n "$AZN" --d 135909 --l 670091 --labels 5.45 --features 75.68 --seed 1 --out "$A/all.txt" >/dev/null
NT=$(( AZN * 490449 / 643474 )); NS=$(( AZN - NT ))
head -1 "$A/all.txt" | awk -v n=$NT '{print n, $2, $3}' > "$A/train.txt"; sed -n "2,$((NT+1))p" "$A/all.txt" >> "$A/train.txt"
head -1 "$A/all.txt" | awk -v n=$NS '{print n, $2, $3}' > "$A/test.txt"; sed -n "$((NT+2)),\$p" "$A/all.txt" >> "$A/test.txt"
head -1 "$A/test.txt" | awk -v n=$(( NS < 10000 ? NS : 10000 )) '{print n, $2, $3}' > "$A/test10k.txt"; sed -n "2,$(( (NS < 10000 ? NS : 10000) + 1 ))p" "$A/test.txt" >> "$A/test10k.txt"
rm -f "$A/all.txt"; say "amazon data" "train $NT test $NS"
run az-forest16 1 $MAX 0 --algo forest --trees 16 --grow alone --data "$A/train.txt" --model-out "$A/f16.model"
ls -la "$A/f16.model" | tee -a "$R"
pr() { local n=$1 t=$2 d=$3; local s=$K/s/$n.t$t.json
  timeout 150 "$X" predict --threads "$t" --model "$A/f16.model" --data "$d" --out "$A/$n.scores" --summary "$s" >"$K/s/$n.t$t.log" 2>&1
  say "$n t$t" "$( [ -s "$s" ] && python3 -c "import json;s=json.load(open('$s'));print({k:v for k,v in s.items() if not isinstance(v,(list,dict))}, s.get('metrics'))" || echo FAILED)"; }
pr az-predict-all $MAX "$A/test.txt"
pr az-predict-10k 1 "$A/test10k.txt"
pr az-predict-10k $MAX "$A/test10k.txt"
rm -f "$A"/*.scores "$A/f16.model"
# PD-Sparse under mpirun, with OpenMPI's Debian files unpacked (none overwritten).
if [ -s "$D/ompi.tgz" ]; then tar -C / --skip-old-files -xzf "$D/ompi.tgz" 2>>"$O/mpi.txt"; ldconfig; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; ldd "$D/xmc-mpi" >>"$O/mpi.txt" 2>&1
M="timeout 120 /usr/bin/orterun --oversubscribe --bind-to none"
$M -np 2 "$D/xmc-mpi" version >>"$O/mpi.txt" 2>&1; say "mpirun np2 version" "rc $?"
for np in 1 $MAX; do s=$K/s/mpi-pdsparse.np$np.json
  $M -np $np "$D/xmc-mpi" train --threads 1 --checkpoint none --algo pdsparse $MC --summary "$s" >"$K/s/mpi-pdsparse.np$np.log" 2>&1
  say "mpi pdsparse np$np t1" "$( [ -s "$s" ] && line "$s" || echo FAILED)"
done
tar -C "$K" -czf "$O/profiles.tgz" p s
