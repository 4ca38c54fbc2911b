#!/usr/bin/env bash
# Run 24 (2026-11-28): small Allgathervs and Alltoallvs in one MPI collective
# (their parts in slots beside their lengths, f1d437a) against two (the
# lengths, then the data: 9088381), at mpirun -np MAX. First mpicheck's bench
# (the collectives alone, the slowest rank's median time), then PD-Sparse and
# MEMOIR on wordnet-mc, alternating twice. Prints one line a bench case and a
# run, with the model's md5, the same for both builds.
# Usage: run24.sh OUT [MAX, 16]. Beside it, as prep24.sh lays them out:
# mpicheck, xmc-mpi (f1d437a) and mpicheck-prev, xmc-mpi-prev (9088381),
# ompi.tgz (Debian's OpenMPI files) and data/wordnet-mc.
set -u
O=$1; MAX=${2:-16}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv24; mkdir -p "$O" "$K/s"
R=$O/results.tsv; T0=$(date +%s)
{ nproc; lscpu | grep -E "Model name|MHz|NUMA|Socket|Thread|L3"; } > "$O/machine.txt" 2>&1
# One line a run: training time, P@1, the ranks' mean time in collectives,
# and the mean of their round phases.
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); m = s.get("metrics", {}); p = s.get("profile") or [{}]
st = s.get("trainer_stats") or [{}]
ph = " ".join("%s=%.3f" % (k.replace("_ms_per_round", ""), sum(x[k] for x in st)/len(st)) for k in sorted(st[0]) if k.endswith("_ms_per_round"))
print("s %.3f\tP@1 %.2f\tcollective_s %.3f\t%s" % (s.get("train_s") or 0, m.get("P@1", 0),
  sum(q.get("collective_s", 0) for q in p)/len(p), ph))
PY
}
say() { printf '%s\t%s\t%s\t%s\n' "$1" "$(( $(date +%s) - T0 ))s" "$2" "$3" | tee -a "$R"; }
sum() { [ -s "$1" ] && md5sum < "$1" | cut -c1-12 || echo none; }
tar -C / --skip-old-files -xzf "$D/ompi.tgz" 2>>"$O/mpi.txt"; ldconfig 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=$(command -v mpirun || command -v orterun || echo /usr/bin/orterun)
mrun() { # bin name args...
  local x=$1 n=$2; shift 2; local s=$K/s/mpi-$n.$x.np$MAX.$(date +%s%N).json
  timeout 120 "$M" --oversubscribe --bind-to none -np "$MAX" "$D/$x" train --threads 1 --checkpoint none "$@" \
    --summary "$s" --model-out "$K/m" >"$s.log" 2>&1
  say "mpi $x $n np$MAX" "$( [ -s "$s" ] && line "$s" || echo FAILED)" "$(sum "$K/m")"; rm -f "$K/m"; }
for k in 1 2; do for x in mpicheck-prev mpicheck; do
  timeout 60 "$M" --oversubscribe --bind-to none -np "$MAX" "$D/$x" -mode bench -iters 100 2>&1 |
    grep '^bench' | while read -r l; do say "$x" "$l" -; done
done; done
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
for k in 1 2; do for a in pdsparse memoir; do for x in xmc-mpi-prev xmc-mpi; do
  mrun $x $a --algo $a $MC
done; done; done
tar -C "$K" -czf "$O/summaries.tgz" s
