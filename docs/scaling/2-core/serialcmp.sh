#!/bin/bash
# serialcmp.sh OLD NEW ROUNDS DATA EPOCHS: PD-Sparse at 1 and 2 threads, the two builds alternating; train_s, the
# serial fraction (serial and collective time over it and the loops' busy time) and the curvature phase.
O=$1 N=$2 R=$3 D=$4 E=$5
for r in $(seq $R); do for t in 1 2; do for b in $O $N; do
  $b train --algo pdsparse --threads $t --epochs $E --data $D --checkpoint none --model-out sc.m --summary sc.json >/dev/null 2>&1
  python3 -c "
import json;d=json.load(open('sc.json'));p=d['profile'][0];s=d['trainer_stats'][0]
f=(p['serial_s']+p['collective_s'])/(p['serial_s']+p['collective_s']+p['busy_s'])
print('t$t $(basename $b)', round(d['train_s'],2), 'serial_f %.4f'%f, 'serial_ms/round %.3f'%p['per_round']['serial_ms'], 'curv', s['curvature_ms_per_round'])"
done; done; done
