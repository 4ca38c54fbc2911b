#!/usr/bin/env bash
# Run 22 (prepared 2026-11-27, not yet run: no machine lent): PD-Sparse on
# wordnet-mc at 16 threads, a rank alone solving each row where its worker
# searched it, 2 loops a round (xB, 68ecb5c), against the build before, 3
# loops a round (xA, 4ec67d0), alternating; both at one thread once.
# Beside this script: xA and xB (CGO_ENABLED=0 go build of each commit) and
# data/wordnet-mc/train.txt.gz. Prints train_s, the serial fraction, loops a
# round, the round phases and the model's md5 (the same for all runs).
# Usage: run22.sh OUT [THREADS, 16] (tried here with 2).
set -u
O=$1; T=${2:-16}; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O"
row() { python3 -c 'import json,sys
s=json.load(open(sys.argv[1])); p=s["profile"][0]
print("train_s %.3f serial_f %.4f loops/round %.2f" % (s["train_s"], (p["serial_s"]+p["collective_s"])/p["train_s"], p["per_round"]["loops"]), s["trainer_stats"][0])' "$1"; }
for r in 1 2 3 4; do for b in xA xB; do
  "$D/$b" train --algo pdsparse --data "$D/data/wordnet-mc/train.txt.gz" --threads "$T" --checkpoint none \
    --summary "$O/$b-$r.json" --model-out /tmp/m > /dev/null 2>&1
  printf '%s-%s\t%s\t%s\n' "$b" "$r" "$(row "$O/$b-$r.json")" "$(md5sum < /tmp/m | cut -c1-12)"
done; done
for b in xA xB; do
  "$D/$b" train --algo pdsparse --data "$D/data/wordnet-mc/train.txt.gz" --threads 1 --checkpoint none \
    --summary "$O/$b-t1.json" --model-out /tmp/m > /dev/null 2>&1
  printf '%s-t1\t%s\t%s\n' "$b" "$(row "$O/$b-t1.json")" "$(md5sum < /tmp/m | cut -c1-12)"
done
