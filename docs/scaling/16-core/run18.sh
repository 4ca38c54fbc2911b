#!/usr/bin/env bash
# Run 18 (prepared 2026-11-27): in-process ranks whose workers take every
# CPU. xA: 040beb7, whose ranks park in their collectives there; xB: the
# same with the ranks spinning wherever their workers fit the CPUs (<=);
# xC: as xB with the in-process barrier taking no lock. PD-Sparse (3
# epochs) at 16 ranks of one thread and 2 ranks of 8, MEMOIR (1 epoch) at
# 16 ranks, alternating.
set -u
O=$1; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv18; mkdir -p "$O/l" "$K"; T0=$(date +%s)
r() { # name bin args
  local n=$1 b=$2; shift 2
  timeout 60 "$D/$b" train --checkpoint none "$@" --summary "$O/l/$n.json" --model-out "$K/$n.model" > "$O/l/$n.log" 2>&1
  printf '%s\t%ss\trc %s\t%s\t%s\n' "$n" "$(( $(date +%s) - T0 ))" "$?" "$(python3 -c '
import json,sys
s=json.load(open(sys.argv[1]))
print("train_s %.3f" % s["train_s"], s.get("trainer_stats") or "")' "$O/l/$n.json" 2>&1 | tail -1)" "$(md5sum < "$K/$n.model" | cut -c1-12)" | tee -a "$O/results.tsv"
  rm -f "$K/$n.model"
}
nproc > "$O/machine.txt"
PD="--algo pdsparse --epochs 3 --data $D/data/wordnet-mc/train.txt.gz"
MM="--algo memoir --epochs 1 --data $D/data/wordnet-mc/train.txt.gz"
for k in 1 2; do for b in xA xB xC; do r pd-r16-$b-$k $b --ranks 16 --threads 1 $PD; done; done
for k in 1 2; do for b in xA xC; do r pd-r2t8-$b-$k $b --ranks 2 --threads 8 $PD; done; done
for k in 1 2; do for b in xA xC; do r memoir-r16-$b-$k $b --ranks 16 --threads 1 $MM; done; done
for k in 1 2; do for b in xA xC; do r pd-r4t4-$b-$k $b --ranks 4 --threads 4 $PD; done; done
r pd-t1 xA --threads 1 $PD
tar -C "$O" -czf "$O/logs.tgz" l && rm -rf "$O/l"
