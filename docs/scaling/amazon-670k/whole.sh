#!/usr/bin/env bash
# whole.sh XMC DATA OUT PARTS THREADS DEADLINE [ALGO [PROJECTION]]
#
# Trains every label of DATA with ALGO (default ppdsparse) as PARTS label ranges (--label-range K/PARTS), one
# after the other on one rank of THREADS threads, so that a training of hours can run over several sittings of
# a machine: each part keeps its own checkpoint, every run stops cleanly at DEADLINE (a `date -d` time, such as
# 03:50) through --time-limit, and the next call resumes the part from its checkpoint. Each sitting of a part
# writes its own summary, OUT/part-K.N.json; a part is done when one says status ok. Once every part is done it
# joins them with xmc merge into OUT/whole.model. It then prints, and on any call, each part's worker seconds
# so far (the summaries' profile busy_s, summed over its sittings), which is what xmc-bench project projects;
# with PROJECTION (the projection.txt of xmc-bench project on the same data and threads), each part's projected
# worker seconds too: its labels times its strata's core-s a label. This machine's speed can change from day to
# day, so with PROJECTION each sitting first retrains the projection's head sample (labels 0:16, a label a unit:
# OUT/probe-DATE.json) and its last stratum's samples (OUT/probe-DATE-tail-FROM-TO.json), which the report sets
# beside the projection's own runs of them. The two differ: the head's labels spend their time on their active
# rows, the tail's on scanning the inverted index, and a machine with other memory can change the second alone.
# A sitting on a machine whose probes disagree with the projection needs a projection of its own.
#
# Used for the whole real-N PPDSparse training that checks the projection (docs/scaling/amazon-670k.md).
set -euo pipefail
xmc=$1 data=$2 out=$3 parts=$4 threads=$5 deadline=$6 algo=${7:-ppdsparse} projection=${8:-}
mkdir -p "$out"
end=$(date -d "$deadline" +%s)

# done_part K: whether a sitting of part K ended with status ok.
done_part() {
	local s
	for s in "$out"/part-"$1".*.json; do
		[ -e "$s" ] || continue
		if python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["status"] != "ok")' "$s"; then
			return 0
		fi
	done
	return 1
}

# report: each part's worker seconds so far, and the projection's.
report() {
	python3 - "$out" "$parts" "$projection" "$algo" <<'PY'
import glob, json, os, re, sys
out, parts, projection, algo = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# Each sitting's speed probe against the projection's run of the same labels.
reference = os.path.join(os.path.dirname(projection), f"{algo}__labels-0-16.json") if projection else ""
if reference and os.path.exists(reference):
    def busy_s(f):
        return sum(p["busy_s"] for p in json.load(open(f))["profile"])
    for f in sorted(glob.glob(f"{out}/probe-*.json")):
        m = re.search(r"-tail-(\d+)-(\d+)\.json$", f)
        lo, hi = (m[1], m[2]) if m else ("0", "16")
        ref = os.path.join(os.path.dirname(projection), f"{algo}__labels-{lo}-{hi}.json")
        if os.path.exists(ref):
            busy, r = busy_s(f), busy_s(ref)
            print(f"{os.path.basename(f)}: labels {lo}:{hi} in {busy:.1f} worker-s, {busy / r:.2f} times the projection's {r:.1f}")
# The projection's strata: (from, to, core-s a label).
strata = []
if projection:
    for line in open(projection):
        m = re.match(r"\s*(\d+):(\d+)\s.*\s([0-9.e+-]+)\s+[0-9.e+-]+\s+[0-9.]+%$", line)
        if m:
            strata.append((int(m[1]), int(m[2]), float(m[3])))
def projected(lo, hi):
    return sum(max(0, min(hi, b) - max(lo, a)) * rate for a, b, rate in strata)
total = total_projected = 0.0
hi = 0
for k in range(parts):
    summaries = sorted(glob.glob(f"{out}/part-{k}.*.json"))
    if not summaries:
        continue
    busy, sittings, finished, labels = 0.0, 0, False, 0
    for f in summaries:
        s = json.load(open(f))
        busy += sum(p["busy_s"] for p in s["profile"])
        labels += sum(t["labels"] for t in s["trainer_stats"])
        sittings += 1
        finished |= s["status"] == "ok"
    # The part's range: from its first log, or, where the logs are gone
    # (the summaries' archive holds none), from where the part before it
    # ended and the labels its sittings trained.
    lo, hi = hi, hi + labels
    logs = sorted(glob.glob(f"{out}/part-{k}.*.log"))
    for line in open(logs[0]) if logs else ():
        if m := re.search(r"training a label range from=(\d+) to=(\d+)", line):
            lo, hi = int(m[1]), int(m[2])
    line = f"part {k}: labels {lo}:{hi}, {busy:.0f} worker-s in {sittings} sittings"
    if not finished:
        print(line + ", not finished")
        continue
    total += busy
    if strata:
        p = projected(lo, hi)
        total_projected += p
        line += f", projected {p:.0f} ({busy / p - 1:+.1%})"
    print(line)
line = f"finished parts: {total:.0f} worker-s"
if strata and total_projected:
    line += f", projected {total_projected:.0f} ({total / total_projected - 1:+.1%})"
print(line)
PY
}

# The speed probe, once a sitting with work left.
left_parts=0
for ((k = 0; k < parts; k++)); do done_part "$k" || left_parts=1; done
if [ -n "$projection" ] && ((left_parts)) && ((end - $(date +%s) >= 120)); then
	stamp=$(date +%Y%m%dT%H%M)
	probe() { # probe RANGE NAME
		"$xmc" train --ranks 1 --threads "$threads" --algo "$algo" --data "$data" --seed 1 --label-range "$1" \
			--labels-per-unit 1 --model-out "$out/probe.model" --checkpoint none \
			--summary "$out/$2.json" >"$out/probe.log" 2>&1
	}
	probe 0:16 "probe-$stamp"
	# The last stratum's sample ranges: the line above "a run's overhead".
	for r in $(grep -B1 "a run's overhead" "$projection" | head -1 | awk '{for (i = 2; i <= NF - 3; i++) print $i}'); do
		probe "$r" "probe-$stamp-tail-${r/:/-}"
	done
fi

for ((k = 0; k < parts; k++)); do
	done_part "$k" && continue
	left=$((end - $(date +%s)))
	if ((left < 120)); then
		echo "$(date +%T) deadline: part $k left for the next sitting"
		report
		exit 0
	fi
	n=$(find "$out" -maxdepth 1 -name "part-$k.*.json" | wc -l)
	echo "$(date +%T) part $k/$parts, sitting $n, at most ${left}s"
	# A run stopped by its time limit exits 3 ("interrupted") and its
	# summary says so; the next turn of the loop then meets the deadline.
	"$xmc" train --ranks 1 --threads "$threads" --algo "$algo" --data "$data" --seed 1 \
		--label-range "$k/$parts" --model-out "$out/part-$k.model" --checkpoint "$out/part-$k.ckpt" \
		--time-limit "${left}s" --summary "$out/part-$k.$n.json" >"$out/part-$k.$n.log" 2>&1 || true
	tail -1 "$out/part-$k.$n.log"
	if ! done_part "$k"; then
		report
		exit 0
	fi
done

# A machine that lost the part models of earlier sittings (their summaries
# kept in the archive) leaves the timings whole but nothing to merge.
missing=""
for ((k = 0; k < parts; k++)); do [ -e "$out/part-$k.model" ] || missing+=" $k"; done
if [ -z "$missing" ]; then
	"$xmc" merge --out "$out/whole.model" "$out"/part-*.model
else
	echo "no whole model: the models of parts$missing are missing"
fi
report
