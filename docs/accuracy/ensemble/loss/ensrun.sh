#!/bin/bash
# ensrun.sh XMC TAG SET SEED MEMBER... -> one line
X=$1; tag=$2; s=$3; seed=$4; shift 4
args=(); for m in "$@"; do args+=(--member "$m"); done
mkdir -p E
$X train --algo ensemble "${args[@]}" --seed $seed --data $s.train.txt --test $s.test.txt --threads 2 --checkpoint none --model-out E/$tag.$s.$seed --summary E/$tag.$s.$seed.json >E/$tag.$s.$seed.log 2>&1 || echo FAIL $tag $s $seed
python3 -c "
import json;d=json.load(open('E/$tag.$s.$seed.json'));m=d['metrics']
print('$tag','$s','seed','$seed','train_s %.2f'%d['train_s'],'predict_s %.2f'%d['predict_s'],'P@1/3/5 %.2f %.2f %.2f'%(m['P@1'],m['P@3'],m['P@5']),'rss %d MB'%(max(d['peak_rss_bytes'])>>20))"
