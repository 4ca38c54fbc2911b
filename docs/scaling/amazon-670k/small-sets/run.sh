#!/usr/bin/env bash
# run.sh DATADIR OUT: projects PPDSparse's and DiSMEC's per-label cost, stratum by stratum, on the shared sets
# (DATADIR/SET/train.txt[.gz]) at 1 thread with bin/xmc-bench project (32 labels a stratum), then sets the label-cost
# estimates against each (fit.py, 4 parts). Run from the repository root after make build; writes OUT/SET-ALGO/.
# The files beside this script are its output of 2026-11-29 (projection.txt as SET-ALGO.txt, fit.txt).
set -euo pipefail
datadir=$1 out=$2
fit=$(dirname "$0")/../fit.py
for s in bibtex delicious debian-tags wordnet-hyper; do
	f=$(ls "$datadir/$s"/train.txt*)
	for a in ppdsparse dismec; do
		bin/xmc-bench project --data "$f" --out "$out/$s-$a" --threads 1 --algos "$a" --sample 32 > "$out/$s-$a.log" 2>&1
		echo "== $s $a"
		python3 "$fit" "$out/$s-$a/projection.txt" "$f" 4 | grep -v "index entry"
	done
done
