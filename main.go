// Command xmc trains and serves extreme multi-label classifiers on HPC
// clusters: one MPI rank per node (mpirun or srun --mpi=pmix), goroutines
// pinned to NUMA domains inside a rank, CRAFTML forests whose trees are
// owned by ranks, and reports of time, memory and communication volume.
//
// Run "xmc help" for the commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// version is xmc's version, recorded in summaries; release builds set it
// with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// command is one xmc subcommand.
type command struct {
	name    string
	summary string
	run     func(args []string) error
}

func commands() []command {
	return []command{
		{"info", "show the job layout: MPI backend, ranks and hosts, NUMA domains, CPU, threads", runInfo},
		{"train", "train a model (--algo forest), optionally evaluate it on a test set", runTrain},
		{"predict", "write the top-k labels of every test row in the XMC score format", runPredict},
		{"eval", "compute P@k, nDCG@k, PSP@k, PSnDCG@k and recall@k of score files (and accuracy and macro-F1 on multi-class data)", runEval},
		{"inspect", "show a model's header, tree shapes and size", runInspect},
		{"gen", "generate a synthetic multi-label dataset with power-law labels", runGen},
		{"bench", "scaling studies and comparisons with other XMC programs: scale, compare, report", runBench},
		{"slurm", "render and submit sbatch scripts of xmc runs (one rank per node), and scaling sweeps", runSlurm},
	}
}

func main() {
	// xmc's large allocations (data matrices, encoded trees and label
	// blocks, decoded models) hold no pointers, so a garbage collection
	// costs little however large they are, while Go's default target lets
	// the heap grow to twice the live data before collecting. A quarter
	// keeps peak memory close to what the job holds (Delicious forest, 2
	// ranks: 143-167 MiB rather than 169-197 MiB per rank, at the same
	// speed). GOGC in the environment still decides.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(25)
	}
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Println("xmc", version)
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:])
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		}
		fmt.Fprintf(stderr, "xmc %s: %v\n", c.name, err)
		return 1
	}
	fmt.Fprintf(stderr, "xmc: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "xmc %s trains and serves extreme multi-label classifiers on HPC clusters.\n\n", version)
	fmt.Fprintf(w, "Usage:\n  xmc <command> [flags]\n  mpirun -np N xmc <command> [flags]     (MPI build, one rank per node)\n  srun --mpi=pmix xmc <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun \"xmc <command> -h\" for a command's flags.\n")
}

// errUsage marks an error already reported by the flag package.
var errUsage = errors.New("usage")

// newFlagSet returns a flag set whose usage text starts with synopsis.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: xmc %s\n\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, mapping a parse error to errUsage (the flag
// package has already printed it) and rejecting stray arguments unless
// positional is true.
func parseFlags(fs *flag.FlagSet, args []string, positional bool) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if !positional && fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "xmc %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}
