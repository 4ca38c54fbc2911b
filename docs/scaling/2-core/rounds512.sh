#!/bin/bash
# rounds512.sh OLD OLDMPI NEW NEWMPI DATA ROUNDS: PD-Sparse's rounds of 64 rows (OLD's default) against 512 with
# bounded steps (NEW's), OLD's build then NEW's in each of ROUNDS rounds.
# - every set at 2 in-process ranks × 1 thread: DATA holds bibtex/ and delicious/ (train.txt) and debian-tags/,
#   wordnet-mc/ and wordnet-hyper/ (train.txt.gz), as ../shared/data does; prints train_s, rows a round, peak RSS;
# - wordnet-mc at 1 and 2 threads, 2 in-process ranks, mpirun -np 1 and -np 2: prints train_s and the log's serial
#   fraction.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OLD=$1 OLDM=$2 NEW=$3 NEWM=$4 D=$5 R=$6
f() { python3 -c "
import json; d=json.load(open('a.json')); print('$1 %.2f'%d['train_s'], d['params']['batch_size'], max(d['peak_rss_bytes'])//2**20, 'MiB', '$2', flush=True)"; }
for r in $(seq $R); do
  for set in bibtex delicious debian-tags wordnet-mc wordnet-hyper; do
    tr=$D/$set/train.txt; [ -f $tr ] || tr=$tr.gz
    for N in old new; do
      if [ $N = old ]; then X=$OLD; else X=$NEW; fi
      $X train --algo pdsparse --ranks 2 --threads 1 --checkpoint none --data $tr --model-out m --summary a.json 2>/dev/null
      f "$r $set $N"
    done
  done
done
for r in $(seq $R); do
  for N in old new; do
    if [ $N = old ]; then X=$OLD XM=$OLDM; else X=$NEW XM=$NEWM; fi
    for lay in t1 t2 r2 np1 np2; do
      case $lay in
        t1) cmd="$X train --threads 1";;
        t2) cmd="$X train --threads 2";;
        r2) cmd="$X train --ranks 2 --threads 1";;
        np1) cmd="mpirun -np 1 --bind-to none $XM train --threads 1";;
        np2) cmd="mpirun -np 2 --bind-to none $XM train --threads 1";;
      esac
      $cmd --algo pdsparse --checkpoint none --data $D/wordnet-mc/train.txt.gz --model-out m --summary a.json >log 2>&1
      f "$r wordnet-mc $N $lay" "$(grep -o 'serial_fraction=[0-9.]*' log | tail -1)"
    done
  done
done
