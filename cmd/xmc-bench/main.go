// Command xmc-bench runs xmc's benchmarks and scaling studies and plots
// them: strong scaling over ranks and threads, comparisons with reference
// programs (the C++ DXML, napkinXC, any command), accuracy studies over
// data sets and seeds, costs at the shapes of the field's data sets, and
// tables and plots of run summaries, such as those of a Slurm sweep. It
// runs xmc (the binary beside it, or --xmc) as a separate program, so that
// xmc itself, the program clusters run, does not link the plotting
// libraries.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"xmc/atomicfile"
	"xmc/bench"
	"xmc/internal/cli"
	"xmc/numa"
	"xmc/train/registry"
)

// commands are xmc-bench's subcommands.
func commands() []cli.Command {
	return []cli.Command{
		{Name: "scale", Summary: "strong scaling on this machine over a grid of ranks × threads, with tables and plots", Run: runScale},
		{Name: "compare", Summary: "run the C++ DXML program (or another reference) and xmc on the same problem and compare", Run: runCompare},
		{Name: "report", Summary: "tabulate and plot the run summaries in a directory (e.g. from a Slurm scaling sweep), or in several side by side", Run: runReport},
		{Name: "accuracy", Summary: "train every algorithm on every data set of a directory with several seeds: P@k, PSP@k, time and memory", Run: runAccuracy},
		{Name: "shapes", Summary: "costs at the shapes of EURLex-4K, Wiki10-31K, Amazon-670K (generated data), and against the number of labels", Run: runShapes},
		{Name: "project", Summary: "project the core-seconds of a one-vs-all training of every label from trained samples of head, torso and tail labels", Run: runProject},
		{Name: "ceiling", Summary: "what this machine allows a pool of W pinned workers: how much slower a core works with W at once, and the speedup a perfectly parallel loop reaches", Run: runCeiling},
		{Name: "peakrss", Summary: "run a command and report its peak resident memory (used by compare under mpirun)", Run: runPeakRSS},
	}
}

func main() {
	p := cli.Program{Name: "xmc-bench", Commands: commands(),
		About: "xmc-bench runs xmc's benchmarks and scaling studies and plots them.\n\nUsage:\n  xmc-bench <command> [flags]\n"}
	os.Exit(p.Run(os.Args[1:], os.Stderr))
}

// newFlagSet returns the flag set of a command whose usage text starts
// with synopsis.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	return cli.NewFlagSet("xmc-bench", name, synopsis)
}

// errUsage marks an error already reported to the user (see cli.ErrUsage).
var errUsage = cli.ErrUsage

// launcherFlags choose how xmc-bench starts xmc.
type launcherFlags struct {
	kind, xmc, xmcMPI, mpirun string
}

func (l *launcherFlags) register(fs *flag.FlagSet, defaultKind string) {
	dir := "."
	if exe, err := os.Executable(); err == nil {
		dir = filepath.Dir(exe)
	}
	fs.StringVar(&l.kind, "launcher", defaultKind, "how xmc runs a job: inproc (xmc --ranks R, ranks as goroutines) or mpirun (mpirun -np R xmc-mpi)")
	fs.StringVar(&l.xmc, "xmc", filepath.Join(dir, "xmc"), "the xmc `binary` for --launcher inproc")
	fs.StringVar(&l.xmcMPI, "xmc-mpi", filepath.Join(dir, "xmc-mpi"), "the `binary` of xmc's MPI build (make build), for --launcher mpirun")
	fs.StringVar(&l.mpirun, "mpirun", strings.Join(bench.DefaultMPIRun(), " "), "mpirun `command` and the flags before -np")
}

func (l *launcherFlags) launcher() bench.Launcher {
	return bench.Launcher{Kind: l.kind, XMC: l.xmc, XMCMPI: l.xmcMPI, MPIRun: strings.Fields(l.mpirun)}
}

// extraArgs returns the arguments after "--" (flags for every xmc train
// run), rejecting other stray arguments.
func extraArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	rest := fs.Args()
	if len(rest) == 0 {
		return nil, nil
	}
	if len(args) <= len(rest) || args[len(args)-len(rest)-1] != "--" {
		fmt.Fprintf(fs.Output(), "xmc %s: unexpected argument %q (xmc train flags go after --)\n", fs.Name(), rest[0])
		fs.Usage()
		return nil, errUsage
	}
	return rest, nil
}

// parseStudy parses the flags of a study's command and returns the xmc
// train flags given after "--", after checking that --out, bound to out,
// was given.
func parseStudy(fs *flag.FlagSet, args []string, out *string) ([]string, error) {
	if err := cli.Parse(fs, args, true); err != nil {
		return nil, err
	}
	extra, err := extraArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if *out == "" {
		return nil, errors.New("--out is required")
	}
	return extra, nil
}

// checkData makes sure a data set exists before a long study starts.
func checkData(flagName, path string) error {
	if path == "" {
		return fmt.Errorf("--%s is required", flagName)
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("--%s: %w (to benchmark on synthetic data of any size, make a data set with: xmc gen --out FILE --n N --d D --l L)", flagName, err)
	}
	return nil
}

func runScale(args []string) error {
	fs := newFlagSet("scale", "scale --data TRAIN [--test TEST] --out DIR [--ranks 1,2,4 --threads 1,2 --repeats 3] [flags] [-- xmc train flags]")
	var lf launcherFlags
	lf.register(fs, bench.InProc)
	var dataPath, testPath, algo, ranks, threads, out string
	var trees, repeats, warmup int
	var seed uint64
	var ceiling, copies bool
	fs.StringVar(&dataPath, "data", "", "training data `FILE` (XMC format; a synthetic one of any size from xmc gen works too)")
	fs.StringVar(&testPath, "test", "", "test data `FILE`: also time prediction and evaluation")
	fs.StringVar(&algo, "algo", registry.Default, "algorithm (xmc train --algo)")
	fs.IntVar(&trees, "trees", 50, "trees of the forest (for algorithms with a --trees flag)")
	fs.Uint64Var(&seed, "seed", 1, "random seed of every run")
	fs.StringVar(&ranks, "ranks", "1,2,4", "rank counts to run, comma-separated")
	fs.StringVar(&threads, "threads", "1,2", "worker threads per rank to run, comma-separated")
	fs.IntVar(&repeats, "repeats", 3, "runs of every layout (interleaved)")
	fs.IntVar(&warmup, "warmup", 1, "unrecorded runs first, on the widest layout, to warm the page cache")
	fs.StringVar(&out, "out", "", "`DIR` for summaries, logs, scaling.json, scaling.csv and plots (must hold no summaries)")
	fs.BoolVar(&ceiling, "ceiling", false, "also time this machine's ceiling at the study's worker counts (ranks × threads), into DIR/ceiling.txt (see xmc-bench ceiling)")
	fs.BoolVar(&copies, "copies", false, "also run, at each of the study's worker counts W, W copies of its one-worker run at once (processes that share only the machine), --repeats times: the speedup W independent workers reach on this job, into DIR/copies.txt (summaries in DIR/copies)")
	extra, err := parseStudy(fs, args, &out)
	if err != nil {
		return err
	}
	if err := checkData("data", dataPath); err != nil {
		return err
	}
	if _, err := registry.Lookup(algo); err != nil {
		return err
	}
	trainArgs := append([]string{"--algo", algo, "--data", dataPath, "--seed", strconv.FormatUint(seed, 10)}, treesArgs(algo, trees)...)
	if testPath != "" {
		if err := checkData("test", testPath); err != nil {
			return err
		}
		trainArgs = append(trainArgs, "--test", testPath)
	}
	rs, err := cli.IntList("ranks", ranks)
	if err != nil {
		return err
	}
	ts, err := cli.IntList("threads", threads)
	if err != nil {
		return err
	}
	grid, err := bench.Grid(rs, ts)
	if err != nil {
		return err
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	runs, err := bench.RunScale(ctx, bench.ScaleConfig{
		Launcher: lf.launcher(), Layouts: grid, Repeats: repeats, Warmup: warmup,
		TrainArgs: append(trainArgs, extra...), Dir: out, Progress: os.Stderr,
	})
	if err != nil {
		if len(runs) > 0 {
			return fmt.Errorf("%w\n(xmc-bench report %s tabulates the %d runs that finished)", err, out, len(runs))
		}
		return err
	}
	s, err := bench.Aggregate(runs)
	if err != nil {
		return err
	}
	if err := writeScaling(s, out); err != nil {
		return err
	}
	var workers []int
	for _, l := range grid {
		workers = append(workers, l.Ranks*l.Threads)
	}
	if ceiling {
		if err := writeCeiling(workers, 20, filepath.Join(out, "ceiling.txt")); err != nil {
			return err
		}
	}
	if !copies {
		return nil
	}
	points, err := bench.RunCopies(ctx, bench.CopiesConfig{
		Launcher: lf.launcher(), Workers: workers, Repeats: repeats, TrainArgs: append(trainArgs, extra...),
		Dir: filepath.Join(out, "copies"), Available: numa.AvailableMemory(os.ReadFile), Progress: os.Stderr,
	})
	if err != nil {
		return err
	}
	path := filepath.Join(out, "copies.txt")
	if err := atomicfile.Write(path, func(w *bufio.Writer) error { return bench.WriteCopies(w, points) }); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", path)
	return bench.WriteCopies(os.Stdout, points)
}

// writeCeiling times this machine's ceiling at the worker counts (none:
// half, all but one and all of its CPUs), ops ops each, and writes its
// table to standard output and to path, if any.
func writeCeiling(workers []int, ops int, path string) error {
	topo, err := numa.Detect()
	if err != nil {
		return err
	}
	if len(workers) == 0 {
		n := len(topo.CPUs())
		workers = []int{max(1, n/2), max(1, n-1), n}
	}
	points, err := bench.Ceiling(topo, workers, ops)
	if err != nil {
		return err
	}
	if path != "" {
		if err := atomicfile.Write(path, func(w *bufio.Writer) error { return bench.WriteCeiling(w, points) }); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Fprintf(os.Stderr, "wrote %s\n", path)
	}
	return bench.WriteCeiling(os.Stdout, points)
}

func runAccuracy(args []string) error {
	fs := newFlagSet("accuracy", "accuracy --data-dir DIR --out DIR [--algos forest,dismec --seeds 1,2,3 --ranks 2] [flags] [-- xmc train flags]")
	var lf launcherFlags
	lf.register(fs, bench.InProc)
	var dataDir, only, algos, seeds, label, out string
	var ranks, threads int
	var names []string
	for _, a := range registry.Algorithms() {
		names = append(names, a.Name)
	}
	fs.StringVar(&dataDir, "data-dir", "", "`DIR` whose subdirectories (or itself) hold train.txt and test.txt, plain or gzipped")
	fs.StringVar(&only, "datasets", "", "comma-separated names of the data sets to use (default: all found)")
	fs.StringVar(&algos, "algos", strings.Join(names, ","), "comma-separated algorithms (ensemble too: xmc train --algo ensemble, its files kept in --out)")
	fs.StringVar(&seeds, "seeds", "1,2,3,4,5", "comma-separated seeds")
	fs.StringVar(&label, "label", "", "name the runs `LABEL` rather than by algorithm: a variant of one algorithm, its flags after --")
	fs.IntVar(&ranks, "ranks", 2, "ranks of every run")
	fs.IntVar(&threads, "threads", 1, "worker threads per rank")
	fs.StringVar(&out, "out", "", "`DIR` of the run summaries (runs already there are not run again) and of accuracy.md, .json, .csv and the plot")
	extra, err := parseStudy(fs, args, &out)
	if err != nil {
		return err
	}
	switch {
	case dataDir == "":
		return errors.New("--data-dir is required")
	case ranks < 1 || threads < 1:
		return fmt.Errorf("--ranks and --threads must be at least 1, got %d and %d", ranks, threads)
	}
	sets, err := bench.FindDatasets(dataDir)
	if err != nil {
		return err
	}
	if only != "" {
		want := strings.Split(only, ",")
		sets = slices.DeleteFunc(sets, func(d bench.Dataset) bool { return !slices.Contains(want, d.Name) })
		if len(sets) != len(want) {
			return fmt.Errorf("--datasets %q: %s holds data sets %v", only, dataDir, datasetNames(dataDir))
		}
	}
	algoList := strings.Split(algos, ",")
	for _, a := range algoList {
		if _, err := registry.Lookup(a); err != nil && a != "ensemble" {
			return err
		}
	}
	var seedList []uint64
	for _, s := range strings.Split(seeds, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("--seeds %q: want integers separated by commas", seeds)
		}
		seedList = append(seedList, v)
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	err = bench.RunAccuracy(ctx, bench.AccuracyConfig{
		Launcher: lf.launcher(), Layout: bench.Layout{Ranks: ranks, Threads: threads}, Datasets: sets, Algorithms: algoList,
		Seeds: seedList, Label: label, TrainArgs: extra, Dir: out, Progress: os.Stderr,
	})
	if err != nil {
		return err
	}
	a, err := bench.LoadAccuracy(out)
	if err != nil {
		return err
	}
	for _, sk := range a.Skipped {
		fmt.Fprintf(os.Stderr, "left out %s\n", sk)
	}
	return writeStudy(a, "accuracy", out)
}

func runShapes(args []string) error {
	fs := newFlagSet("shapes", "shapes --out DIR [--shapes eurlex-4k,wiki10-31k,amazon-670k --n 25000 --algos forest,dismec,ppdsparse --sweep-l 10000,100000,670091] [flags] [-- xmc train flags]")
	var lf launcherFlags
	lf.register(fs, bench.InProc)
	var shapes, algos, sweep, sweepAlgos, out string
	var n, ranks, threads int
	var seed uint64
	// The default is the multi-label shapes; a multi-class one is asked for.
	var names, multiLabel []string
	for _, s := range bench.Shapes() {
		if s.MultiClass {
			names = append(names, s.Name+" (multi-class)")
			continue
		}
		names = append(names, s.Name)
		multiLabel = append(multiLabel, s.Name)
	}
	fs.StringVar(&shapes, "shapes", strings.Join(multiLabel, ","), "comma-separated shapes of generated data sets, of "+
		strings.Join(names, ", ")+"; the last one's D and densities are the sweep's")
	fs.IntVar(&n, "n", 25000, "rows generated per data set, the first 80% to train on, the rest to test")
	fs.StringVar(&algos, "algos", "forest,dismec,ppdsparse", "comma-separated algorithms trained on every shape")
	fs.StringVar(&sweep, "sweep-l", "10000,31000,100000,300000,670091", "comma-separated label counts of the sweep (empty: none)")
	fs.StringVar(&sweepAlgos, "sweep-algos", registry.Default, "comma-separated algorithms of the sweep")
	fs.IntVar(&ranks, "ranks", 2, "ranks of every run")
	fs.IntVar(&threads, "threads", 1, "worker threads per rank")
	fs.Uint64Var(&seed, "seed", 1, "seed of the data and of every run")
	var trees int
	fs.IntVar(&trees, "trees", 50, "trees of a forest")
	fs.StringVar(&out, "out", "", "`DIR` of the generated data, run summaries (reused when present), logs, shapes.md/.json/.csv and the sweep's plots")
	extra, err := parseStudy(fs, args, &out)
	if err != nil {
		return err
	}
	var cfg bench.ShapesConfig
	for _, name := range strings.Split(shapes, ",") {
		s, err := bench.ShapeByName(strings.TrimSpace(name))
		if err != nil {
			return fmt.Errorf("--shapes: %w", err)
		}
		cfg.Shapes = append(cfg.Shapes, s)
	}
	for _, list := range []struct {
		flag, value string
		into        *[]string
	}{{"algos", algos, &cfg.Algorithms}, {"sweep-algos", sweepAlgos, &cfg.SweepAlgorithms}} {
		for _, a := range strings.Split(list.value, ",") {
			if _, err := registry.Lookup(a); err != nil {
				return fmt.Errorf("--%s: %w", list.flag, err)
			}
			*list.into = append(*list.into, a)
		}
	}
	if sweep != "" {
		if cfg.SweepL, err = cli.IntList("sweep-l", sweep); err != nil {
			return err
		}
	}
	cfg.Launcher, cfg.Layout, cfg.N, cfg.Seed = lf.launcher(), bench.Layout{Ranks: ranks, Threads: threads}, n, seed
	cfg.TrainArgs, cfg.Dir, cfg.Progress = extra, out, os.Stderr
	cfg.AlgoArgs = func(algo string) []string { return treesArgs(algo, trees) }
	ctx, stop := cli.SignalContext()
	defer stop()
	if err := bench.RunShapes(ctx, cfg); err != nil {
		return err
	}
	st, err := bench.LoadShapes(out)
	if err != nil {
		return err
	}
	return writeStudy(st, "shapes", out)
}

// treesArgs returns --trees trees for an algorithm that has that flag (a
// forest), and nothing for the others.
func treesArgs(algo string, trees int) []string {
	a, err := registry.Lookup(algo)
	if err != nil {
		return nil
	}
	fs := flag.NewFlagSet(algo, flag.ContinueOnError)
	a.New().Flags(fs)
	if fs.Lookup("trees") == nil {
		return nil
	}
	return []string{"--trees", strconv.Itoa(trees)}
}

// datasetNames lists the data sets of dir, for messages.
func datasetNames(dir string) []string {
	sets, _ := bench.FindDatasets(dir)
	var names []string
	for _, s := range sets {
		names = append(names, s.Name)
	}
	return names
}

// study is the result of a benchmark (a scaling study, a comparison, an
// accuracy or a scale study), which xmc-bench reports alike: a table on
// stdout and in markdown, JSON and CSV files, and plots.
type study interface {
	WriteTable(io.Writer) error
	WriteJSON(io.Writer) error
	WriteCSV(io.Writer) error
	Plot(dir string) ([]string, error)
}

// writeStudy prints the study's table and writes it into dir as name.md,
// name.json and name.csv, with its plots.
func writeStudy(s study, name, dir string) error {
	if err := s.WriteTable(os.Stdout); err != nil {
		return err
	}
	written, err := writeFiles(dir, map[string]func(io.Writer) error{
		name + ".md": s.WriteTable, name + ".json": s.WriteJSON, name + ".csv": s.WriteCSV,
	})
	if err != nil {
		return err
	}
	plots, err := s.Plot(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", strings.Join(append(written, plots...), ", "))
	return nil
}

// writeScaling reports a scaling study into dir, after listing the runs it
// left out.
func writeScaling(s *bench.Scaling, dir string) error {
	for _, sk := range s.Skipped {
		fmt.Fprintf(os.Stderr, "left out %s\n", sk)
	}
	return writeStudy(s, "scaling", dir)
}

// writeFiles writes each named file of dir atomically, in name order, and
// returns their paths.
func writeFiles(dir string, files map[string]func(io.Writer) error) ([]string, error) {
	var paths []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(dir, name)
		write := files[name]
		if err := atomicfile.Write(path, func(w *bufio.Writer) error { return write(w) }); err != nil {
			return paths, fmt.Errorf("write %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func runCompare(args []string) error {
	fs := newFlagSet("compare", "compare (--dxml-bin PATH | --ref-cmd TEMPLATE) --data TRAIN --test TEST --out DIR [--algo forest --trees 50 --ranks 2 --repeats 3] [flags] [-- xmc train flags]")
	var lf launcherFlags
	lf.register(fs, bench.MPIRun)
	var dxml, refCmd, refName, trainRE, scores, dataPath, testPath, out, algo string
	var trees, ranks, threads, repeats int
	pRE := map[int]*string{}
	fs.StringVar(&dxml, "dxml-bin", "", "the C++ DXML `program`, run as: mpirun -np RANKS PATH TRAIN TEST TREES_PER_RANK")
	fs.StringVar(&refCmd, "ref-cmd", "", "instead of --dxml-bin, a /bin/sh command `template` of another program, with placeholders "+bench.TemplatePlaceholders+
		"; put {peakrss} right before the program to measure its memory, e.g. '{mpirun} -np {ranks} {peakrss} ./prog {train} {test} {trees_per_rank}'")
	fs.StringVar(&refName, "ref-name", "", "the reference's name in tables (default DXML or reference)")
	fs.StringVar(&trainRE, "ref-train-re", bench.DXML("").TrainTime.String(), "`regexp` whose group is the training time in seconds in the reference's output (largest match counts)")
	for _, k := range []int{1, 3, 5} {
		pRE[k] = fs.String(fmt.Sprintf("ref-p%d-re", k), bench.PrecisionPattern(k).String(), fmt.Sprintf("`regexp` whose group is P@%d in percent in the reference's output (last match counts)", k))
	}
	fs.StringVar(&scores, "ref-scores", "", "score `FILE` the reference writes (XMC score format, {scores} in the template): xmc evaluates it instead of reading P@k from the output")
	fs.StringVar(&dataPath, "data", "", "training data `FILE`")
	fs.StringVar(&testPath, "test", "", "test data `FILE`")
	fs.StringVar(&algo, "algo", "forest", "xmc's `algorithm`; --trees is passed to xmc for the forest only (its flags for another go after --)")
	fs.IntVar(&trees, "trees", 50, "trees of the whole forest (DXML gets trees/ranks per rank)")
	fs.IntVar(&ranks, "ranks", 2, "MPI ranks of both programs")
	fs.IntVar(&threads, "threads", 1, "worker threads per xmc rank; match the threads your reference build uses per rank")
	fs.IntVar(&repeats, "repeats", 3, "runs of each program, alternating")
	fs.StringVar(&out, "out", "", "`DIR` for logs, summaries, compare.json, compare.csv and the plot")
	extra, err := parseStudy(fs, args, &out)
	if err != nil {
		return err
	}
	for _, c := range []struct{ flag, path string }{{"data", dataPath}, {"test", testPath}} {
		if err := checkData(c.flag, c.path); err != nil {
			return err
		}
	}
	var ref bench.Reference
	switch {
	case (dxml == "") == (refCmd == ""):
		return errors.New("give the reference program: --dxml-bin PATH or --ref-cmd TEMPLATE")
	case dxml != "":
		if _, err := os.Stat(dxml); err != nil {
			return fmt.Errorf("--dxml-bin: %w", err)
		}
		ref = bench.DXML(dxml)
	default:
		ref = bench.Reference{Name: "reference", Command: refCmd}
	}
	if refName != "" {
		ref.Name = refName
	}
	ref.Scores = scores
	if ref.TrainTime, err = regexp.Compile(trainRE); err != nil {
		return fmt.Errorf("--ref-train-re: %w", err)
	}
	ref.Precision = map[int]*regexp.Regexp{}
	for k, s := range pRE {
		if ref.Precision[k], err = regexp.Compile(*s); err != nil {
			return fmt.Errorf("--ref-p%d-re: %w", k, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locate the xmc binary for {peakrss}: %w", err)
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	cmp, err := bench.RunCompare(ctx, bench.CompareConfig{
		Ref: ref, Algo: algo, Launcher: lf.launcher(), PeakRSS: []string{self, "peakrss", "--"},
		Train: dataPath, Test: testPath, Trees: trees, Ranks: ranks, Threads: threads, Repeats: repeats,
		XMCArgs: extra, Dir: out, Progress: os.Stderr,
	})
	if err != nil {
		return err
	}
	return writeStudy(cmp, "compare", out)
}

func runCeiling(args []string) error {
	fs := newFlagSet("ceiling", "ceiling [--workers 8,15,16] [--ops 20]\n\n"+
		"Times the same work on every worker of pools of pinned workers (one worker first): loops of arithmetic,\n"+
		"of random reads from a table in cache and in memory, and of a stream. A study made with xmc-bench scale\n"+
		"on this machine is read against the speedups it prints. It holds 0.5 GiB and 32 MiB a worker.")
	var workers string
	var ops int
	fs.StringVar(&workers, "workers", "", "worker counts to time, comma-separated (default: half, all but one, and all of the CPUs)")
	fs.IntVar(&ops, "ops", 20, "ops of each loop and worker count, the best kept")
	if err := cli.Parse(fs, args, false); err != nil {
		return err
	}
	var counts []int
	if workers != "" {
		var err error
		if counts, err = cli.IntList("workers", workers); err != nil {
			return err
		}
	}
	return writeCeiling(counts, ops, "")
}

func runPeakRSS(args []string) error {
	fs := newFlagSet("peakrss", "peakrss -- COMMAND [ARGS]\n\nRuns COMMAND and then prints to standard error a line\n"+
		"  "+bench.PeakRSSMarker+" rank=R host=H pid=P peak_rss_kib=K exit=E\nwith its peak resident set size (ru_maxrss). "+
		"Under mpirun, put it before the program to measure every rank:\n  mpirun -np 4 xmc-bench peakrss -- ./prog ARGS")
	if err := cli.Parse(fs, args, true); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintf(fs.Output(), "xmc-bench peakrss: no command given\n")
		fs.Usage()
		return errUsage
	}
	code, err := bench.ExecPeakRSS(argv, os.Stdin, os.Stdout, os.Stderr, os.Stderr)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("%s exited with status %d", argv[0], code)
	}
	return nil
}

// paperCoreS are the core-seconds the papers report for training every
// label of the real Amazon-670K, by algorithm: PPDSparse's 921.9 s on 100
// cores (Yen et al., KDD 2017), printed beside a projection of that shape.
var paperCoreS = map[string]float64{"ppdsparse": 92190}

// realAmazonN is the real Amazon-670K's training rows.
const realAmazonN = 490449

func runProject(args []string) error {
	fs := newFlagSet("project", "project --out DIR (--data FILE | --shape NAME --n N) [flags] [-- xmc train flags]")
	var lf launcherFlags
	lf.register(fs, bench.InProc)
	var c bench.ProjectConfig
	var shape, algos string
	var ranks, threads int
	fs.StringVar(&c.Data, "data", "", "training data `FILE` (default: generated, see --shape)")
	fs.StringVar(&shape, "shape", "amazon-670k", "shape of the generated training data, without --data")
	fs.IntVar(&c.N, "n", realAmazonN, "training rows generated, without --data (490,449: the real Amazon-670K's)")
	fs.StringVar(&algos, "algos", "dismec,ppdsparse", "comma-separated one-vs-all algorithms to project")
	fs.IntVar(&c.Sample, "sample", 64, "labels trained per stratum")
	fs.IntVar(&c.Pieces, "pieces", 2, "runs of consecutive labels a stratum's sample is trained in, spread over the stratum")
	fs.Float64Var(&c.Ratio, "ratio", 2, "each stratum of labels (after the head's sample) this many times as long as the labels before it")
	fs.IntVar(&ranks, "ranks", 1, "ranks of every run")
	fs.IntVar(&threads, "threads", runtime.NumCPU(), "worker threads per rank")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the data and of every run")
	fs.StringVar(&c.Dir, "out", "", "`DIR` of the generated data, the samples' summaries (reused when present) and logs, projection.txt and each algorithm's label-costs-ALGO.txt (for xmc train --label-costs)")
	extra, err := parseStudy(fs, args, &c.Dir)
	if err != nil {
		return err
	}
	if c.Data == "" {
		if c.Shape, err = bench.ShapeByName(shape); err != nil {
			return fmt.Errorf("--shape: %w", err)
		}
	} else if err := checkData("data", c.Data); err != nil {
		return err
	}
	for _, a := range strings.Split(algos, ",") {
		if _, err := registry.Lookup(a); err != nil {
			return fmt.Errorf("--algos: %w", err)
		}
		c.Algorithms = append(c.Algorithms, a)
	}
	c.Launcher, c.Layout, c.TrainArgs, c.Progress = lf.launcher(), bench.Layout{Ranks: ranks, Threads: threads}, extra, os.Stderr
	ctx, stop := cli.SignalContext()
	defer stop()
	projections, err := bench.RunProjection(ctx, c)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, p := range projections {
		if err := bench.WriteProjection(&b, p); err != nil {
			return err
		}
		if err := bench.WriteLabelCosts(filepath.Join(c.Dir, "label-costs-"+p.Algorithm+".txt"), p, c); err != nil {
			return err
		}
		if paper, ok := paperCoreS[p.Algorithm]; ok && c.Data == "" && c.Shape.Name == "amazon-670k" && c.N >= realAmazonN {
			fmt.Fprintf(&b, "the paper's figure on the real Amazon-670K: %.0f core-seconds; projected/paper %.2f\n", paper, p.CoreS/paper)
		}
		b.WriteString("\n")
	}
	fmt.Print(b.String())
	return atomicfile.WriteBytes(filepath.Join(c.Dir, "projection.txt"), []byte(b.String()))
}
