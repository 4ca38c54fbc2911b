#!/bin/bash
# fitbench.sh OLD.test NEW.test [ROUNDS]: BenchmarkFitAmazon (model/ensemble/fit_bench_test.go: the default members'
# held-out predictions at Amazon-670K's held-out size, on 1 worker and one a core) of two test binaries
# (`go test -c ./model/ensemble` of the build before, with this file copied in, and of this one), alternating.
for r in $(seq ${3:-2}); do
  for v in "$1" "$2"; do
    "$v" -test.run '^$' -test.bench FitAmazon -test.benchtime 1x | grep Bench | sed "s|^|$(basename $v) round $r: |"
  done
done
