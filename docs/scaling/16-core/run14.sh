#!/usr/bin/env bash
# Run 14 (prepared 2026-11-27): a forest grown together, whose level loops
# are dealt (numa.Team.For) in xnew2 and wait for every member (Run) in xmc,
# the build before; 16 trees on the Wiki10-31K shape (20,000 rows) at 16
# threads (alternating) and 8, and at one thread; PD-Sparse at 16 threads,
# xnew2 (Spread reading a group's counter before taking from it) against
# xnew (run 13's Spread).
set -u
O=$1; MAX=${2:-16}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv14; mkdir -p "$O/l" "$K"; T0=$(date +%s)
r() { # name bin args
  local n=$1 b=$2; shift 2
  timeout 150 "$D/$b" train --checkpoint none "$@" --summary "$O/l/$n.json" --model-out "$K/$n.model" > "$O/l/$n.log" 2>&1
  printf '%s\t%ss\t%s\t%s\n' "$n" "$(( $(date +%s) - T0 ))" "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); p=s["profile"][0]; print("train_s %.3f loopE %.2f serial_f %.4f" % (s["train_s"], p["busy_s"]/max(1e-9,p["workers"]*p["loop_s"]), (p["serial_s"]+p["collective_s"])/max(1e-9,p["serial_s"]+p["collective_s"]+p["busy_s"])), s.get("trainer_stats") or "")' "$O/l/$n.json" 2>&1 | tail -1)" "$(md5sum < "$K/$n.model" | cut -c1-12)" | tee -a "$O/results.tsv"
  rm -f "$K/$n.model"
}
nproc > "$O/machine.txt"
W=$K/w10
"$D/xnew2" gen --n 25000 --d 101938 --l 30938 --labels 18.64 --features 673.4 --seed 1 --out "$W.all" >/dev/null
head -1 "$W.all" | awk '{print 20000, $2, $3}' > "$W.train"; sed -n '2,20001p' "$W.all" >> "$W.train"; rm "$W.all"
F="--algo forest --trees 16 --grow together --data $W.train"
PD="--algo pdsparse --data $D/data/wordnet-mc/train.txt.gz"
for k in 1 2; do r forest-head-t$MAX-$k xmc --threads "$MAX" $F; r forest-new-t$MAX-$k xnew2 --threads "$MAX" $F; done
r forest-head-t8 xmc --threads 8 $F; r forest-new-t8 xnew2 --threads 8 $F
for k in 1 2; do r pd-spread-t$MAX-$k xnew --threads "$MAX" $PD; r pd-new2-t$MAX-$k xnew2 --threads "$MAX" $PD; done
r forest-new-t1 xnew2 --threads 1 $F
tar -C "$O" -czf "$O/logs.tgz" l && rm -rf "$O/l"
