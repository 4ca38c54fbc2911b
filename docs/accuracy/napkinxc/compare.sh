#!/bin/bash
# xmc's ensemble beside napkinXC through xmc-bench compare, per set and napkinXC setting (its defaults,
# --ensemble 3, Parabel's), 1 rank × 2 threads each, 2 alternating runs of each program.
# Usage: compare.sh DATA OUT, DATA holding SET.train.txt and SET.test.txt (decompressed) of bibtex, delicious,
# debian-tags and wordnet-hyper; XMC_BENCH (default bin/xmc-bench) and NXC (default nxc) are the binaries;
# CONFIGS (default "plt ens3 parabel") the napkinXC settings to run.
B=${XMC_BENCH:-bin/xmc-bench}
export NXC=${NXC:-nxc}
here=$(cd "$(dirname "$0")" && pwd)
DATA=$1 OUT=$2
mkdir -p "$OUT"
for s in bibtex delicious debian-tags wordnet-hyper; do
 for cfg in "plt:" "ens3:--ensemble 3" "parabel:--ensemble 3 --loss squaredHinge -C 1"; do
  name=${cfg%%:*}; args=${cfg#*:}
  case " ${CONFIGS:-plt ens3 parabel} " in *" $name "*) ;; *) continue;; esac
  $B compare --launcher inproc --algo ensemble --ranks 1 --threads 2 --repeats 2 --ref-name "napkinXC-$name" \
    --ref-cmd "{peakrss} sh $here/ref.sh {train} {test} $args" --ref-train-re 'Train real time \(s\): *([0-9.]+)' \
    --data "$DATA/$s.train.txt" --test "$DATA/$s.test.txt" --out "$OUT/$s-$name" \
    -- --model-out "$OUT/$s-$name/ensemble.model" --checkpoint none > "$OUT/$s-$name.txt" 2> "$OUT/$s-$name.err"
  echo "$s $name exit $?"; cat "$OUT/$s-$name.txt"
 done
done
