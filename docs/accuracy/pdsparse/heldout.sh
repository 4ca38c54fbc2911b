#!/bin/bash
# heldout.sh BIN: PD-Sparse's default against --heldout 0.1 --epochs 30 on the five sets, seed 1, 2 ranks x 1 thread.
b=$1
for set in bibtex delicious debian-tags wordnet-mc wordnet-hyper; do
 case $set in bibtex|delicious) tr=/work/main/testdata/$set/train.txt; te=/work/main/testdata/$set/test.txt;;
  *) tr=/work/shared/data/$set/train.txt.gz; te=/work/shared/data/$set/test.txt.gz;; esac
 for a in "" "--heldout 0.1 --epochs 30"; do
  $b train --algo pdsparse --ranks 2 --threads 1 --data $tr --test $te $a --checkpoint none --model-out /tmp/s66/hom --summary /tmp/s66/ho.json > /tmp/s66/ho.log 2>&1 || echo FAIL
  echo "$set [${a:-default}] $(python3 -c "import json;d=json.load(open('/tmp/s66/ho.json'));m=d['metrics'];print('P@1 %.2f P@5 %.2f train_s %.2f'%(m['P@1'],m.get('P@5',0),d['train_s']))") $(grep -o 'best_heldout_accuracy=[0-9.]*' /tmp/s66/ho.log) $(grep -o 'pdsparse epochs=[0-9]*' /tmp/s66/ho.log)"
 done
done
