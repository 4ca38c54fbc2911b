#!/bin/bash
# A label tree with napkinXC's defaults (logistic loss, C 10) and with Parabel's loss and C (--loss sqhinge
# --cost 1), alternating, 1 rank × 2 threads, seed 1. Usage: loss.sh XMC DATA OUT ROUNDS, DATA holding
# SET.train.txt and SET.test.txt (decompressed). Prints per run the set, the loss, train_s, P@1/3/5, the model's
# weights and the peak RSS.
X=$1 DATA=$2 D=$3 R=$4
mkdir -p "$D"
for r in $(seq "$R"); do
  for s in bibtex delicious debian-tags wordnet-hyper; do
    for lc in "log 10" "sqhinge 1"; do
      set -- $lc
      $X train --algo plt --loss $1 --cost $2 --seed 1 --data "$DATA/$s.train.txt" --test "$DATA/$s.test.txt" \
        --threads 2 --checkpoint none --model-out "$D/$s.$1" --summary "$D/$s.$1.json" > "$D/$s.$1.log" 2>&1 || echo "FAIL $s $1"
      python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); m = d["metrics"]; t = d["trainer_stats"][0]
print(sys.argv[2], sys.argv[3], "train_s %.2f" % d["train_s"], "P@1/3/5 %.2f %.2f %.2f" % (m["P@1"], m["P@3"], m["P@5"]),
      "weights %d" % t["weights"], "rss %d MiB" % (max(d["peak_rss_bytes"]) >> 20))
' "$D/$s.$1.json" "$s" "$1"
    done
  done
done
