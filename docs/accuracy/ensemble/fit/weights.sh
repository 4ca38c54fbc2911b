#!/bin/bash
# weights.sh XMC ORACLE.test DIR: in DIR, holding the default ensembles of the accuracy runs (acc-ens5/, seeds 1-3),
# their held-out rows (held.SET.sS.txt, as for refit.sh) and the test sets (SET.test.txt), predict the held-out and
# test rows with each member (its Candidates: 30 labels, the label tree 5; into DIR/orc), and run the analysis tests
# of analysis_test.go.txt (ORACLE.test: the test binary of model/ensemble with that file copied in) on each ensemble.
X=$1 T=$2
cd "$3" || exit 1
mkdir -p orc
for d in ${SETS:-bibtex delicious debian-tags wordnet-hyper}; do for s in 1 2 3; do
  E=$PWD/acc-ens5/${d}__ensemble__s$s.model
  for m in 0-forest:30 1-ppdsparse:30 2-plt:5; do
    $X predict --model $E.${m%:*} --data $d.test.txt --top-k ${m#*:} --out orc/$d.$s.${m%:*}.scores --threads 2 >/dev/null 2>&1 || echo FAIL
    $X predict --model $E.${m%:*} --data held.$d.s$s.txt --top-k ${m#*:} --out orc/held.$d.$s.${m%:*}.scores --threads 2 >/dev/null 2>&1 || echo FAIL
  done
  echo "$d s$s"
  ORACLE_ENS=$E ORACLE_TEST=$d.test.txt ORACLE_HELD=held.$d.s$s.txt \
  ORACLE_SCORES=orc/$d.$s.0-forest.scores,orc/$d.$s.1-ppdsparse.scores,orc/$d.$s.2-plt.scores \
  ORACLE_HELD_SCORES=orc/held.$d.$s.0-forest.scores,orc/held.$d.$s.1-ppdsparse.scores,orc/held.$d.$s.2-plt.scores \
  $T -test.run "Listwise|Oracle|Alone|OOB" | grep -E "LW|ORACLE k=1|ALONE|OOB"
done; done
