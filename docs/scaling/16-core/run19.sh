#!/usr/bin/env bash
# Run 19 (prepared 2026-11-27): the build of the day (80c1dad: in-process
# ranks spinning wherever their workers fit the CPUs, the barrier without a
# lock, the in-process exchange staged in kept buffers) on full trainings
# of wordnet-mc: MEMOIR and PD-Sparse at one thread, 16 in-process ranks of
# one thread and 16 threads.
set -u
O=$1; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv19; mkdir -p "$O/l" "$K"; T0=$(date +%s)
r() { # name args
  local n=$1; shift
  timeout 120 "$D/xmc" train --checkpoint none "$@" --summary "$O/l/$n.json" --model-out "$K/$n.model" > "$O/l/$n.log" 2>&1
  printf '%s\t%ss\trc %s\t%s\t%s\n' "$n" "$(( $(date +%s) - T0 ))" "$?" "$(python3 -c '
import json,sys
s=json.load(open(sys.argv[1])); p=s["profile"][0]
print("train_s %.3f loopE %.2f" % (s["train_s"], p["busy_s"]/max(1e-9,p["workers"]*p["loop_s"])), s.get("trainer_stats") or "")' "$O/l/$n.json" 2>&1 | tail -1)" "$(md5sum < "$K/$n.model" | cut -c1-12)" | tee -a "$O/results.tsv"
  rm -f "$K/$n.model"
}
nproc > "$O/machine.txt"
PD="--algo pdsparse --data $D/data/wordnet-mc/train.txt.gz"
MM="--algo memoir --data $D/data/wordnet-mc/train.txt.gz"
for k in 1 2; do r pd-r16-$k --ranks 16 --threads 1 $PD; r pd-t16-$k --threads 16 $PD; done
r pd-t1 --threads 1 $PD
for k in 1 2; do r memoir-r16-$k --ranks 16 --threads 1 $MM; r memoir-t16-$k --threads 16 $MM; done
r memoir-t1 --threads 1 $MM
tar -C "$O" -czf "$O/logs.tgz" l && rm -rf "$O/l"
