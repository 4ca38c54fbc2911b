#!/usr/bin/env bash
# Run 21 (prepared 2026-11-27): PD-Sparse on wordnet-mc at 16 threads, a
# rank alone decoding its entries where its workers left them (xB, 352d6ec)
# against the build before (xA, 76cac3c), alternating; xB at one thread.
set -u
O=$1; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O"
for r in 1 2 3 4; do for b in xA xB; do
  "$D/$b" train --algo pdsparse --data "$D/data/wordnet-mc/train.txt.gz" --threads 16 --checkpoint none \
    --summary "$O/$b-$r.json" --model-out /tmp/m > /dev/null 2>&1
  printf '%s-%s\t%s\t%s\n' "$b" "$r" "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("train_s %.3f" % s["train_s"], s["trainer_stats"][0])' "$O/$b-$r.json")" "$(md5sum < /tmp/m | cut -c1-12)"
done; done
"$D/xB" train --algo pdsparse --data "$D/data/wordnet-mc/train.txt.gz" --threads 1 --checkpoint none --summary "$O/xB-t1.json" --model-out /tmp/m > /dev/null 2>&1
printf 'xB-t1\t%s\n' "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("train_s %.3f" % s["train_s"], s["trainer_stats"][0])' "$O/xB-t1.json")"
