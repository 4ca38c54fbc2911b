#!/usr/bin/env bash
# Run 12: where a PD-Sparse round's loops wait at 16 threads (xdiag: HEAD
# plus per-loop start/end times of every worker, by phase), and whether the
# collector (GOGC=off, gctrace) or a spare P for it (GOMAXPROCS) matters.
set -u
O=$1; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O/l"; T0=$(date +%s)
MC="--data $D/data/wordnet-mc/train.txt.gz --checkpoint none --algo pdsparse"
r() { # name env... -- bin args
  local n=$1; shift; local e=(); while [ "$1" != -- ]; do e+=("$1"); shift; done; shift
  env "${e[@]}" timeout 100 "$@" $MC --summary "$O/l/$n.json" --model-out "$O/l/$n.model" > "$O/l/$n.log" 2>&1
  printf '%s\t%ss\t%s\n' "$n" "$(( $(date +%s) - T0 ))" "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); p=s["profile"][0]; print("train_s %.3f loopE %.2f serial_ms %.4f" % (s["train_s"], p["busy_s"]/p["workers"]/p["loop_s"], p["per_round"]["serial_ms"]), s.get("trainer_stats"))' "$O/l/$n.json" 2>&1 | tail -1)" | tee -a "$O/results.tsv"
  rm -f "$O/l/$n.model"; grep "diag ph" "$O/l/$n.log" | tail -4 >> "$O/results.tsv"
  grep -c "^gc " "$O/l/$n.log" | sed 's/^/gc cycles: /' >> "$O/results.tsv"
}
nproc > "$O/machine.txt"; lscpu >> "$O/machine.txt"
r head16 X=1 -- "$D/xmc" train --threads 16
r diag16 GODEBUG=gctrace=1 -- "$D/xdiag" train --threads 16
r diag16-gcoff GOGC=off -- "$D/xdiag" train --threads 16
r diag16-procs20 GOMAXPROCS=20 -- "$D/xdiag" train --threads 16
r diag15 X=1 -- "$D/xdiag" train --threads 15
r diag8 GODEBUG=gctrace=1 -- "$D/xdiag" train --threads 8
r head16-gcoff GOGC=off -- "$D/xmc" train --threads 16
r head1 X=1 -- "$D/xmc" train --threads 1
tar -C "$O" -czf "$O/logs.tgz" l && rm -rf "$O/l"
