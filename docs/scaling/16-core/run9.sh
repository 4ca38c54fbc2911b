#!/usr/bin/env bash
# Run 9 (2026-11-26): 16 in-process ranks of one thread, the ranks' waits and
# loops laid out several ways (a debug build's knobs, XMC_DEBUG_*: SPIN, how
# long a collective spins before parking; INLINE=0, one-worker loops handed to
# the worker; NOTOGETHER=1, the rounds on the rank's goroutine rather than its
# worker's pinned thread), GOMAXPROCS, and mpirun -np MAX for reference.
# PD-Sparse 3 epochs, MEMOIR 1, on wordnet-mc. Usage: run9.sh OUT MAX
set -u
O=$1; MAX=${2:-16}; D=$(cd "$(dirname "$0")" && pwd); K=/tmp/dv9; mkdir -p "$O" "$K/s"
R=$O/results.tsv; T0=$(date +%s)
say() { printf '%s\t%s\t%s\n' "$1" "$(( $(date +%s) - T0 ))s" "$2" | tee -a "$R"; }
ts() { python3 -c "import json,sys;s=json.load(open(sys.argv[1]));p=s.get('profile') or [];print('s %.3f P@1 %.2f coll %.1f serial %.1f busy %.1f' % (s['train_s'], s.get('metrics',{}).get('P@1',0), sum(q['collective_s'] for q in p), sum(q['serial_s'] for q in p), sum(q['busy_s'] for q in p)))" "$1"; }
MC="--data $D/data/wordnet-mc/train.txt.gz --test $D/data/wordnet-mc/test.txt.gz"
run() { local n=$1 a=$2; shift 2; local s=$K/s/$a.$n.$(date +%s%N).json
  timeout 60 env "$@" "$D/xmc-dbg" train --ranks "$MAX" --threads 1 --checkpoint none $A $MC --summary "$s" >"$s.log" 2>&1
  say "$a $n" "$( [ -s "$s" ] && ts "$s" || echo FAILED)"; }
tar -C / --skip-old-files -xzf "$D/ompi.tgz" 2>/dev/null; ldconfig
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=$(command -v orterun || echo /usr/bin/orterun)
for A in "--algo pdsparse --epochs 3" "--algo memoir --epochs 1"; do a=${A#--algo }; a=${a%% *}
  for rep in 1 2; do
    run A-spin1ms $a X=1
    run B-park $a XMC_DEBUG_SPIN=0
    run C-park-noinline-caller $a XMC_DEBUG_SPIN=0 XMC_DEBUG_INLINE=0 XMC_DEBUG_NOTOGETHER=1
    run D-spin1ms-caller $a XMC_DEBUG_NOTOGETHER=1
    run E-spin1ms-procs48 $a GOMAXPROCS=48
    run F-spin200us $a XMC_DEBUG_SPIN=200us
  done
  s=$K/s/mpi-$a.$(date +%s%N).json
  timeout 60 "$M" --oversubscribe --bind-to none -np "$MAX" "$D/xmc-mpi" train --threads 1 --checkpoint none $A $MC --summary "$s" >"$s.log" 2>&1
  say "$a mpirun-np$MAX" "$( [ -s "$s" ] && ts "$s" || echo FAILED)"
done
tar -C "$K" -czf "$O/summaries.tgz" s
