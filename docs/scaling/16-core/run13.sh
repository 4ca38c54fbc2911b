#!/usr/bin/env bash
# Run 13 (prepared 2026-11-27): PD-Sparse's feature shards applied by
# Team.Spread, whose loop ends when the shards are done (xnew), against the
# build before, whose loop of Run waited for every member (xmc), on
# wordnet-mc at 16 threads (alternating), 15, 8 and 1; rounds of 16 rows;
# and the same build with each worker's start and end of every loop timed
# (xdiag2, run 12's instrumentation).
set -u
O=$1; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O/l"; T0=$(date +%s)
MC="--data $D/data/wordnet-mc/train.txt.gz --checkpoint none --algo pdsparse"
r() { # name env... -- bin args
  local n=$1; shift; local e=(); while [ "$1" != -- ]; do e+=("$1"); shift; done; shift
  env "${e[@]}" timeout 100 "$@" $MC --summary "$O/l/$n.json" --model-out "$O/l/$n.model" > "$O/l/$n.log" 2>&1
  printf '%s\t%ss\t%s\t%s\n' "$n" "$(( $(date +%s) - T0 ))" "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); p=s["profile"][0]; print("train_s %.3f loopE %.2f serial_ms %.4f" % (s["train_s"], p["busy_s"]/p["workers"]/p["loop_s"], p["per_round"]["serial_ms"]), s.get("trainer_stats"))' "$O/l/$n.json" 2>&1 | tail -1)" "$(md5sum < "$O/l/$n.model" | cut -c1-12)" | tee -a "$O/results.tsv"
  rm -f "$O/l/$n.model"; grep "diag ph" "$O/l/$n.log" | tail -4 >> "$O/results.tsv"
}
nproc > "$O/machine.txt"; lscpu >> "$O/machine.txt"
for k in 1 2; do r head16-$k X=1 -- "$D/xmc" train --threads 16; r new16-$k X=1 -- "$D/xnew" train --threads 16; done
r diag2-16 X=1 -- "$D/xdiag2" train --threads 16
r new15 X=1 -- "$D/xnew" train --threads 15
r new8 X=1 -- "$D/xnew" train --threads 8
r head16-b16 X=1 -- "$D/xmc" train --threads 16 --batch-size 16
r new16-b16 X=1 -- "$D/xnew" train --threads 16 --batch-size 16
r new16-prof X=1 -- "$D/xnew" train --threads 16 --cpuprofile "$O/new16.prof"
r new1 X=1 -- "$D/xnew" train --threads 1
r head1 X=1 -- "$D/xmc" train --threads 1
r head16-3 X=1 -- "$D/xmc" train --threads 16; r new16-3 X=1 -- "$D/xnew" train --threads 16
tar -C "$O" -czf "$O/logs.tgz" l && rm -rf "$O/l"
