#!/usr/bin/env bash
# What a class partition costs PD-Sparse's ranks, measured on one core: a
# rank's classes split into S shares for the search (the test-only
# wantParts, set by XMC_PARTS in a scratch build made with shares.patch),
# each row searched share by share as S ranks of one thread each would. The
# work over the S shares, against one share, is the work S ranks do
# together against one rank, before their exchange and waits. The patch
# also counts the feature lists the search visits (SCR line).
# Usage: shares.sh DATA [ROUNDS, 3] [EPOCHS, 3] [SHARES, "1 2 4 16"] (from the repository root).
set -eu
DATA=$1; ROUNDS=${2:-3}; EPOCHS=${3:-3}; SHARES=${4:-1 2 4 16}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
git worktree add -q --detach "$W/src" HEAD
(cd "$W/src" && git apply "$OLDPWD/docs/scaling/2-core/shares.patch" && go build -o "$W/xmc" .)
git worktree remove --force "$W/src"
for k in $(seq "$ROUNDS"); do for s in $SHARES; do
  XMC_PARTS=$s "$W/xmc" train --algo pdsparse --data "$DATA" --threads 1 --epochs "$EPOCHS" --checkpoint none \
    --model-out "$W/m$s" --summary "$W/s.json" 2>"$W/log" || { cat "$W/log"; exit 1; }
  python3 - "$W/s.json" "$s" "$(grep SCR "$W/log")" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); st = s["trainer_stats"][0]
print("shares %2s  train_s %6.2f  search %6.2f  apply %5.2f  curvature %5.3f ms a round  %s" % (sys.argv[2], s["train_s"],
  st["search_ms_per_round"], st["apply_ms_per_round"], st["curvature_ms_per_round"], sys.argv[3]))
PY
done; done
for s in $SHARES; do cmp -s "$W/m1" "$W/m$s" || echo "shares $s: model bytes differ from one share"; done
