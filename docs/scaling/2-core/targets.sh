#!/bin/bash
# targets.sh XMC XMC_MPI BASE ROUNDS: issue 30's 2-core targets on one build, in ROUNDS rounds; each round runs every
# trainer on its issue set at 1 thread, 2 threads and 2 in-process ranks of one thread (PD-Sparse and MEMOIR also
# under `mpirun -np 1` and `-np 2`), then BASE (the issue's build, e4f0867) at 2 in-process ranks, one after the
# other. Prints a line a run: round, trainer, layout, train_s, and the serial fraction the run logs.
# Sets: $WIKI (the first 20,000 rows of `xmc gen --n 25000 --d 101938 --l 30938 --labels 18.64 --features 673.4
# --seed 1`), testdata/delicious/train.txt, $WMC (../shared/data/wordnet-mc/train.txt.gz).
set -u
X=$1 XM=$2 BASE=$3 ROUNDS=$4
WIKI=${WIKI:-/tmp/w10/train.txt} DEL=testdata/delicious/train.txt WMC=${WMC:-../shared/data/wordnet-mc/train.txt.gz}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d)
# run ROUND TRAINER LAYOUT COMMAND...: the command gets the summary and model flags appended.
run() {
	local round=$1 name=$2 layout=$3
	shift 3
	rm -f "$T/s.json"
	"$@" --checkpoint none --model-out "$T/m" --summary "$T/s.json" >/dev/null 2>"$T/log"
	local s f
	s=$(python3 -c "import json;print(round(json.load(open('$T/s.json'))['train_s'],3))" 2>/dev/null || echo failed)
	f=$(grep -o 'serial_fraction=[0-9.e-]*' "$T/log" | tail -1)
	echo "$round $name $layout $s ${f:-}"
}
for round in $(seq 1 "$ROUNDS"); do
	for t in "forest --trees 16 --data $WIKI" "dismec --data $DEL" "ppdsparse --data $DEL" \
		"pdsparse --data $WMC" "memoir --data $WMC"; do
		name=${t%% *}
		# shellcheck disable=SC2086 # $t is the trainer and its flags
		{
			run "$round" "$name" 1x1 "$X" train --algo $t --threads 1
			run "$round" "$name" 1x2 "$X" train --algo $t --threads 2
			run "$round" "$name" 2x1 "$X" train --algo $t --ranks 2 --threads 1
			if [ "$name" = pdsparse ] || [ "$name" = memoir ]; then
				run "$round" "$name" mpirun1 mpirun --oversubscribe --bind-to none -np 1 "$XM" train --algo $t --threads 1
				run "$round" "$name" mpirun2 mpirun --oversubscribe --bind-to none -np 2 "$XM" train --algo $t --threads 1
			fi
			run "$round" "$name" base2x1 "$BASE" train --algo $t --ranks 2 --threads 1
		}
	done
done
rm -rf "$T"
