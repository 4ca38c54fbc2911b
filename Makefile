# xmc build, demo and tests. `make demo` and `make test` work on a fresh
# Debian machine: they install OpenMPI (and, for the Slurm tests, Slurm) with
# apt-get when run as root, or say exactly what to install.

GO       ?= go
BIN      := bin
OUT      := out
# Builds record the commit they were made from (xmc version, run summaries'
# xmc_version), even where the go environment turns that off; outside a git
# checkout nothing is recorded.
GOFLAGS  ?= -buildvcs=auto
# OpenMPI refuses to run as root without these; harmless otherwise.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
MPIRUN   := mpirun --oversubscribe --bind-to none
# Fuzzing runs a number of inputs, not a duration: with a duration, Go's
# fuzz coordinator before Go 1.27 can report its own deadline as a failure
# ("context deadline exceeded", no failing input; golang/go#75804), as it did
# here twice under load. 60000 inputs take 3-6 s here.
FUZZTIME ?= 60000x

.PHONY: all build demo test deps vet unit race mpitest slurmtest fuzz bench scaling clean

all: build

# deps makes sure the MPI toolchain the cgo backend links against is present.
deps:
	@if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1 || ! dpkg -s libpmix-dev >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing OpenMPI (openmpi-bin libopenmpi-dev libpmix-dev)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      openmpi-bin libopenmpi-dev libpmix-dev >/dev/null || exit 1; \
	  else \
	    echo "xmc needs OpenMPI: run  sudo apt-get install openmpi-bin libopenmpi-dev libpmix-dev"; exit 1; \
	  fi; \
	fi

# build makes bin/xmc (pure Go, in-process ranks only), bin/xmc-mpi
# (OpenMPI through cgo, for mpirun and srun --mpi=pmix) and bin/xmc-bench
# (benchmarks and plots, which run bin/xmc and bin/xmc-mpi).
build: deps
	$(GO) build $(GOFLAGS) -o $(BIN)/xmc .
	$(GO) build $(GOFLAGS) -tags mpi -o $(BIN)/xmc-mpi .
	$(GO) build $(GOFLAGS) -o $(BIN)/xmc-bench ./cmd/xmc-bench

# demo trains a 50-tree forest on the bundled Bibtex with 2 MPI ranks and
# evaluates it on the test split.
demo: build
	@mkdir -p $(OUT)
	$(MPIRUN) -np 2 $(BIN)/xmc-mpi train --algo forest --trees 50 --seed 7 \
	  --data testdata/bibtex/train.txt --test testdata/bibtex/test.txt \
	  --model-out $(OUT)/bibtex.model --summary $(OUT)/bibtex.json --comm-report
	$(BIN)/xmc inspect --model $(OUT)/bibtex.model | head -5

vet: deps
	$(GO) vet ./...
	$(GO) vet -tags mpi ./...

unit: deps
	$(GO) test -count=1 ./...

# mpitest runs the MPI integration tests under real mpirun (collectives,
# failures, watchdog, network namespaces as nodes, the CLI end to end):
# the tests the mpi tag adds, all named TestMPI; unit has run the others.
mpitest: deps
	$(GO) test -count=1 -tags mpi -run '^TestMPI' ./mpi/... .

# slurmtest brings up a single-node Slurm (slurm/local/up.sh installs
# slurmctld, slurmd and munge when missing), submits a 2-rank forest
# training with srun --mpi=pmix, checks its summary and tears Slurm down.
slurmtest: deps
	XMC_SLURM_TEST=1 $(GO) test -count=1 -run Integration ./slurm

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReadXMC$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./data
	$(GO) test -run '^$$' -fuzz '^FuzzReadLIBSVM$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./data
	$(GO) test -run '^$$' -fuzz '^FuzzReadSplit$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./data
	$(GO) test -run '^$$' -fuzz '^FuzzReadMatrix$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./data
	$(GO) test -run '^$$' -fuzz '^FuzzReadModel$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./model
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./scores
	$(GO) test -run '^$$' -fuzz '^FuzzTreeUnmarshal$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./model/forest

# race runs the concurrent runtime (unit runner, worker pools, in-process
# MPI, a round's reports searched in pieces and its steps applied by
# workers done searching, a forest's tree grown by
# workers that help split each other's nodes, a rank's last tree grown
# alone helped by its other worker, a one-vs-all unit's labels trained by
# the workers without a unit) and the command line's
# in-process ranks under the race detector; a race ends the command with
# exit status 66. -short leaves out what has nothing concurrent (the MPI
# conformance suite moves 256 KiB buffers rather than 8 MB; PD-Sparse's
# runs of one worker on one rank) and PD-Sparse's 2-worker layouts that
# apply the steps in a loop of their own (its 3-worker layouts do too,
# where a team of 3 does not fit the CPUs), and its layouts train one
# epoch rather than two: unit runs it all.
race: deps
	$(GO) test -race -short -count=1 ./mpi ./numa ./runner ./job ./train ./train/onevsall
	$(GO) test -race -short -count=1 -run 'TestPDSparseSameWeights|TestRowPanicEndsRound' ./train/pdsparse
	$(GO) build -race -o $(BIN)/xmc-race .
	@rm -rf $(OUT)/race && mkdir -p $(OUT)/race
	GORACE="halt_on_error=1 exitcode=66" $(BIN)/xmc-race train --ranks 2 --threads 2 --trees 6 --grow alone \
	  --data testdata/bibtex/train.txt --test testdata/bibtex/test.txt --model-out $(OUT)/race/m.model > /dev/null
	GORACE="halt_on_error=1 exitcode=66" $(BIN)/xmc-race train --ranks 2 --trees 4 --shard --checkpoint-every 0 \
	  --data testdata/bibtex/train.txt --model-out $(OUT)/race/s.manifest > /dev/null
	GORACE="halt_on_error=1 exitcode=66" $(BIN)/xmc-race predict --ranks 2 --model $(OUT)/race/s.manifest \
	  --data testdata/bibtex/test.txt --out $(OUT)/race/scores.txt > /dev/null
	GORACE="halt_on_error=1 exitcode=66" $(BIN)/xmc-race train --trees 2 --branch 2 --grow together --threads 3 \
	  --data testdata/delicious/train.txt --test testdata/delicious/test.txt --checkpoint none > /dev/null
	GORACE="halt_on_error=1 exitcode=66" $(BIN)/xmc-race train --algo dismec --ranks 2 --data testdata/bibtex/train.txt \
	  --test testdata/bibtex/test.txt > /dev/null
	GORACE="halt_on_error=1 exitcode=66" $(BIN)/xmc-race train --algo memoir --ranks 2 --threads 2 --epochs 1 --heldout 0.1 \
	  --data testdata/bibtex/train.txt --test testdata/bibtex/test.txt > /dev/null
	GORACE="halt_on_error=1 exitcode=66" $(BIN)/xmc-race train --algo memoir --index graph --regularizer l1 --ranks 2 --threads 2 \
	  --epochs 1 --data testdata/bibtex/train.txt --test testdata/bibtex/test.txt > /dev/null

test: vet unit race mpitest slurmtest fuzz

bench:
	$(GO) test -run '^$$' -bench . -benchtime 10x ./data ./train/... ./model/...

# scaling regenerates docs/scaling/mpirun: strong scaling of a 50-tree forest
# on Bibtex over 1-2 MPI ranks x 1-2 threads, 3 interleaved repeats.
scaling: build
	rm -rf $(OUT)/scaling
	bin/xmc-bench scale --data testdata/bibtex/train.txt --test testdata/bibtex/test.txt --algo forest \
	  --trees 50 --ranks 1,2 --threads 1,2 --repeats 3 --launcher mpirun --out $(OUT)/scaling
	mkdir -p docs/scaling/mpirun
	cp $(OUT)/scaling/scaling.* $(OUT)/scaling/*.png $(OUT)/scaling/*.svg docs/scaling/mpirun/

clean:
	rm -rf $(BIN) $(OUT)
