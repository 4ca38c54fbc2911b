#!/usr/bin/env bash
# Run 25 (2026-11-28): PD-Sparse and MEMOIR on wordnet-mc at MAX workers in
# hybrid layouts under mpirun: 1 rank of MAX threads, 2 of MAX/2, 4 of MAX/4
# and MAX of one, the build of f1d437a (xmc-mpi), alternating twice; runs
# that would start after BUDGET seconds are skipped. One line a run, with
# the model's md5, the same for every layout.
# Usage: run25.sh OUT [MAX, 16] [BUDGET, 100]. Beside it, as prep24.sh lays
# them out: xmc-mpi, ompi.tgz (Debian's OpenMPI files) and data/wordnet-mc.
set -u
O=$1; MAX=${2:-16}; BUDGET=${3:-100}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv25; mkdir -p "$O" "$K/s"
R=$O/results.tsv; T0=$(date +%s)
nproc > "$O/machine.txt"
line() { python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); m = s.get("metrics", {}); p = s.get("profile") or [{}]
print("s %.3f\tP@1 %.2f\tcollective_s %.3f\tbusy_s %.3f" % (s.get("train_s") or 0, m.get("P@1", 0),
  sum(q.get("collective_s", 0) for q in p)/len(p), sum(q.get("busy_s", 0) for q in p)))
PY
}
say() { printf '%s\t%s\t%s\t%s\n' "$1" "$(( $(date +%s) - T0 ))s" "$2" "$3" | tee -a "$R"; }
sum() { [ -s "$1" ] && md5sum < "$1" | cut -c1-12 || echo none; }
tar -C / --skip-old-files -xzf "$D/ompi.tgz" 2>>"$O/mpi.txt"; ldconfig 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=$(command -v mpirun || command -v orterun || echo /usr/bin/orterun)
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
for k in 1 2; do for a in pdsparse memoir; do for np in 1 2 4 "$MAX"; do
  th=$(( MAX / np )); n="$a np$np t$th"
  [ $(( $(date +%s) - T0 )) -lt "$BUDGET" ] || { say "$n" skipped -; continue; }
  s=$K/s/$a.np$np.t$th.$(date +%s%N).json
  timeout 60 "$M" --oversubscribe --bind-to none -np "$np" "$D/xmc-mpi" train --threads "$th" --checkpoint none \
    --algo "$a" $MC --summary "$s" --model-out "$K/m" >"$s.log" 2>&1
  say "$n" "$( [ -s "$s" ] && line "$s" || echo FAILED)" "$(sum "$K/m")"; rm -f "$K/m"
done; done; done
tar -C "$K" -czf "$O/summaries.tgz" s
