// Command xmc trains and serves extreme multi-label classifiers on HPC
// clusters: one MPI rank per node (mpirun or srun --mpi=pmix), goroutines
// pinned to NUMA domains inside a rank, CRAFTML forests whose trees are
// owned by ranks, and reports of time, memory and communication volume.
//
// Run "xmc help" for the commands.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"xmc/internal/cli"
)

// version is xmc's version, recorded in summaries with the commit it was
// built from (buildVersion); release builds set it with -ldflags
// "-X main.version=...".
var version = "0.1.0-dev"

// commands are xmc's subcommands.
func commands() []cli.Command {
	return []cli.Command{
		{Name: "info", Summary: "show the job layout: MPI backend, ranks and hosts, NUMA domains, CPU, threads", Run: runInfo},
		{Name: "train", Summary: "train a model (--algo forest), optionally evaluate it on a test set", Run: runTrain},
		{Name: "predict", Summary: "write the top-k labels of every test row (XMC score format, or a SciPy .npz matrix)", Run: runPredict},
		{Name: "eval", Summary: "compute P@k, nDCG@k, PSP@k, PSnDCG@k and recall@k of score files (and accuracy and macro-F1 on multi-class data)", Run: runEval},
		{Name: "ensemble", Summary: "combine trained models into an ensemble, its weights fitted on held-out rows", Run: runEnsemble},
		{Name: "merge", Summary: "join the models of label ranges (train --label-range) into the model of every label", Run: runMerge},
		{Name: "inspect", Summary: "show a model's header, tree shapes and size", Run: runInspect},
		{Name: "convert", Summary: "convert a dataset between the XMC, LIBSVM and NumPy (.npz) formats", Run: runConvert},
		{Name: "gen", Summary: "generate a synthetic multi-label dataset with power-law labels", Run: runGen},
		{Name: "slurm", Summary: "render and submit sbatch scripts of xmc runs (one rank per node), and scaling sweeps", Run: runSlurm},
		{Name: "version", Summary: "print xmc's version and the commit it was built from", Run: runVersion},
	}
}

// program is xmc's command line.
func program() cli.Program {
	return cli.Program{Name: "xmc", Commands: commands(), About: fmt.Sprintf(`xmc %s trains and serves extreme multi-label classifiers on HPC clusters.

Usage:
  xmc <command> [flags]
  mpirun -np N xmc <command> [flags]     (MPI build, one rank per node)
  srun --mpi=pmix xmc <command> [flags]

Benchmarks, scaling studies and their plots: xmc-bench (make build).
`, buildVersion())}
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

// run runs xmc with the command line args and returns its exit status.
func run(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--version" {
		args = []string{"version"}
	}
	return program().Run(args, stderr)
}

func runVersion(args []string) error {
	if err := parseFlags(newFlagSet("version", "version"), args, false); err != nil {
		return err
	}
	fmt.Println("xmc", buildVersion())
	return nil
}

// errUsage marks an error already reported to the user (see cli.ErrUsage).
var errUsage = cli.ErrUsage

// newFlagSet returns the flag set of an xmc command whose usage text
// starts with synopsis.
func newFlagSet(name, synopsis string) *flag.FlagSet { return cli.NewFlagSet("xmc", name, synopsis) }

// parseFlags is cli.Parse.
func parseFlags(fs *flag.FlagSet, args []string, positional bool) error {
	return cli.Parse(fs, args, positional)
}
