#!/usr/bin/env bash
# Run 16 (prepared 2026-11-27): PD-Sparse on wordnet-mc at 16 threads, five
# builds alternating twice, A at one thread too. A: ddc7954 (Spread). B: A
# with a shard's sweep skipping the rows without features in it. C: B with
# each worker taking what is left of its own shards in one call. D: B with
# rows split into pieces below eight rows a worker (two shares at 16
# workers and 64 rows). E: C and D. Then DiSMEC and PPDSparse on the
# bundled Delicious at 1 and 16 threads (A).
set -u
O=$1; MAX=${2:-16}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv16; mkdir -p "$O/l" "$K"; T0=$(date +%s)
r() { # name bin args
  local n=$1 b=$2; shift 2
  timeout 100 "$D/$b" train --checkpoint none "$@" --summary "$O/l/$n.json" --model-out "$K/$n.model" > "$O/l/$n.log" 2>&1
  printf '%s\t%ss\t%s\t%s\n' "$n" "$(( $(date +%s) - T0 ))" "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); p=s["profile"][0]; print("train_s %.3f loopE %.2f serial_ms %.4f" % (s["train_s"], p["busy_s"]/max(1e-9,p["workers"]*p["loop_s"]), p["per_round"]["serial_ms"]), s.get("trainer_stats") or "")' "$O/l/$n.json" 2>&1 | tail -1)" "$(md5sum < "$K/$n.model" | cut -c1-12)" | tee -a "$O/results.tsv"
  rm -f "$K/$n.model"
}
nproc > "$O/machine.txt"
PD="--algo pdsparse --data $D/data/wordnet-mc/train.txt.gz"
for k in 1 2; do for v in A B C D E; do r $v-t$MAX-$k x$v --threads "$MAX" $PD; done; done
r A-t1 xA --threads 1 $PD
R=$(cd "$D/../.." && pwd); DL="--data $R/testdata/delicious/train.txt"
for a in dismec ppdsparse; do r $a-t1 xA --threads 1 --algo $a $DL; r $a-t$MAX xA --threads "$MAX" --algo $a $DL; done
tar -C "$O" -czf "$O/logs.tgz" l && rm -rf "$O/l"
