#!/usr/bin/env bash
# run.sh DATA ALGO PARTS OUT: the parts of --label-range K/PARTS cut by the trainer's estimate against those cut by
# measured label costs (--label-costs), on one training file at 1 thread. It projects ALGO's cost of DATA with
# bin/xmc-bench project (32 labels a stratum), whose label-costs file the second cut reads, then trains every part
# both ways and prints each part's worker seconds (the summary's busy_s) and the largest and smallest part against
# their mean: how long a job array of PARTS tasks waits for its slowest. Run from the repository root after make build.
set -euo pipefail
data=$1 algo=$2 parts=$3 out=$4
mkdir -p "$out"
bin/xmc-bench project --data "$data" --out "$out/project" --threads 1 --algos "$algo" --sample 32 >"$out/project.log" 2>&1
for cut in estimate measured; do
	costs=()
	[ "$cut" = measured ] && costs=(--label-costs "$out/project/label-costs-$algo.txt")
	for ((k = 0; k < parts; k++)); do
		bin/xmc train --algo "$algo" --data "$data" --threads 1 --seed 1 --checkpoint none --label-range "$k/$parts" \
			"${costs[@]}" --model-out "$out/part.model" --summary "$out/$cut-$k.json" >"$out/$cut-$k.log" 2>&1
	done
done
python3 - "$out" "$parts" <<'PY'
import json, re, sys
out, parts = sys.argv[1], int(sys.argv[2])
for cut in ("estimate", "measured"):
    busy, ranges = [], []
    for k in range(parts):
        busy.append(sum(p["busy_s"] for p in json.load(open(f"{out}/{cut}-{k}.json"))["profile"]))
        m = re.search(r"training a label range from=(\d+) to=(\d+)", open(f"{out}/{cut}-{k}.log").read())
        ranges.append(f"{m[1]}:{m[2]}")
    mean = sum(busy) / parts
    print(f"{cut:9}: parts " + ", ".join(f"{r} {b:.2f} s" for r, b in zip(ranges, busy))
          + f"; largest {max(busy) / mean:.2f}, smallest {min(busy) / mean:.2f} of their mean")
PY
