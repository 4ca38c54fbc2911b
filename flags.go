package main

import (
	"flag"
	"fmt"
	"strings"

	"xmc/pipeline"
)

// registerInput adds the flags that say how dataset files are read.
func registerInput(fs *flag.FlagSet, in *pipeline.Input) {
	in.SplitCol = 1
	fs.Var(&in.Format, "format", "dataset format: xmc (Extreme Classification Repository), libsvm, or npz (features and labels as two SciPy CSR .npz or dense .npy files)")
	fs.IntVar(&in.SplitCol, "split-col", in.SplitCol, "column of the split files to use (1-based), for the DXML split format")
}

// registerEval adds the flags that choose the metrics.
func registerEval(fs *flag.FlagSet, e *pipeline.EvalOptions) {
	*e = pipeline.DefaultEvalOptions()
	fs.IntVar(&e.TopK, "top-k", e.TopK, "labels predicted per row")
	fs.Float64Var(&e.PropA, "prop-a", e.PropA, "propensity model parameter A (Jain et al. 2016)")
	fs.Float64Var(&e.PropB, "prop-b", e.PropB, "propensity model parameter B")
}

// flagNames returns the names of the flags given in args, before a "--"
// that ends them, as the flag package would read them (but for values that
// look like flags, which it would not take as names).
func flagNames(args []string) []string {
	var names []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name := strings.TrimLeft(a, "-")
		name, _, _ = strings.Cut(name, "=")
		if name != "" {
			names = append(names, name)
		}
	}
	return names
}

// setFlags returns a function reporting whether the flag name was set on
// the command line parsed by fs.
func setFlags(fs *flag.FlagSet) func(name string) bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return func(name string) bool { return set[name] }
}

// printFlags writes the defaults of the flags that register adds to a
// fresh flag set, under a heading.
func printFlags(fs *flag.FlagSet, heading string, register func(*flag.FlagSet)) {
	tmp := flag.NewFlagSet(heading, flag.ContinueOnError)
	tmp.SetOutput(fs.Output())
	register(tmp)
	fmt.Fprintf(fs.Output(), "\n%s:\n", heading)
	tmp.PrintDefaults()
}

// stringList is a flag that may be repeated, collecting its values.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, " ") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
