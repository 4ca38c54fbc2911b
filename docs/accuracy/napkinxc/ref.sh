#!/bin/sh
# napkinXC as the reference program of xmc-bench compare: trains on TRAIN and
# tests on TEST with the flags after them, printing its training time and
# P@1, P@3, P@5 in percent, as compare reads them. NXC is napkinXC's binary
# (default nxc), THREADS its threads (default 2).
# Usage, in --ref-cmd: '{peakrss} sh ref.sh {train} {test} [nxc train flags]'
NXC=${NXC:-nxc}
train=$1 test=$2
shift 2
m=$(mktemp -d) || exit 1
trap 'rm -rf "$m"' EXIT
"$NXC" train -i "$train" -o "$m/model" -t "${THREADS:-2}" --seed 1 "$@" > "$m/train.log" 2>&1 || { cat "$m/train.log"; exit 1; }
grep -a "Train real time (s)" "$m/train.log"
"$NXC" test -i "$test" -o "$m/model" -t "${THREADS:-2}" --topK 5 --measures p@1,p@3,p@5 --metricsPrecision 6 "$@" > "$m/test.log" 2>&1 || { cat "$m/test.log"; exit 1; }
awk '/^ *P@[135]:/ { printf "%s %.4f\n", $1, 100 * $2 }' "$m/test.log"
