#!/bin/bash
# ceiling-pdsparse.sh XMC DATA ROUNDS: PD-Sparse (3 epochs) at 1 rank x 1 thread alone; two such runs at once (separate
# processes, nothing shared: the throughput this machine's two cores give two independent copies of the work, the
# most a 2-worker layout could reach); 1 rank x 2 threads; 2 in-process ranks x 1 thread. ROUNDS times, in turn.
# Prints train_s and the phases per round (rank 0's).
X=$1 D=$2 R=$3
r() { name=$1 i=$2; shift 2; $X train --algo pdsparse --epochs 3 --data $D --checkpoint none --model-out ceil$i.model --summary ceil$i.json "$@" >/dev/null 2>&1
  python3 -c "import json;d=json.load(open('ceil$i.json'));s=d['trainer_stats'][0];print('$name',round(d['train_s'],2),'search',s['search_ms_per_round'],'apply',s['apply_ms_per_round'],'exchange',s.get('exchange_ms_per_round',0))"; }
for i in $(seq $R); do
  r alone 0 --threads 1
  r pair-a 1 --threads 1 & r pair-b 2 --threads 1; wait
  r threads2 0 --threads 2
  r ranks2 0 --ranks 2 --threads 1
done
