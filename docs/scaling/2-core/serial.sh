#!/bin/bash
# serial.sh XMC: every trainer on its issue-30 set at 1 rank x 2 threads, one run each; prints the trainer, train_s
# and the serial fraction the run logs. The sets: wiki20k.txt (the first 20,000 rows of `xmc gen --n 25000 --d 101938
# --l 30938 --labels 18.64 --features 673.4 --seed 1`), DATA/delicious.train.txt, DATA/wordnet-mc.train.txt.
X=$1 DATA=${DATA:-/tmp/ed}
run() { name=$1; shift; $X train "$@" --threads 2 --checkpoint none --model-out sm --summary ss.json 2>ss.log >/dev/null
  echo "$name $(python3 -c "import json;print(round(json.load(open('ss.json'))['train_s'],2))") $(grep -o 'serial_fraction=[0-9.]*' ss.log | tail -1)"; }
run forest16 --algo forest --trees 16 --data wiki20k.txt
run dismec --algo dismec --data $DATA/delicious.train.txt
run ppdsparse --algo ppdsparse --data $DATA/delicious.train.txt
run pdsparse --algo pdsparse --data $DATA/wordnet-mc.train.txt
run memoir --algo memoir --data $DATA/wordnet-mc.train.txt
run plt --algo plt --data $DATA/delicious.train.txt
