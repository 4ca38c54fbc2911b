package slurm

import (
	"fmt"
	"path/filepath"
	"slices"
)

// Sweep is a strong-scaling study: the same xmc run on every combination of
// node and thread counts, repeated, each run writing its summary into Dir
// for xmc-bench report.
type Sweep struct {
	// Base is the run: its xmc command and sbatch options. Its Nodes and
	// CPUsPerTask are replaced by each run's, its Output by one in Dir.
	Base Job
	// Nodes and Threads are the node counts and the CPUs per task
	// (worker threads per rank) to combine.
	Nodes, Threads []int
	// Repeats is how many times each combination runs, at least 1.
	Repeats int
	// Dir receives each run's summary, output and script.
	Dir string
}

// Run is one job of a Sweep.
type Run struct {
	// Tag names the run: "<nodes>x<threads>-r<repeat>", e.g. "4x32-r2".
	Tag string
	// Job is the run's job; its xmc arguments end with --summary Summary.
	Job Job
	// Summary, Output and Script are the paths of the run's JSON summary,
	// its Slurm output and the batch script to write, all in Dir.
	Summary, Output, Script string
}

// Runs returns the jobs of the sweep, repeat by repeat: every combination
// runs once before any runs again, so that a slow period of the cluster
// affects all combinations alike rather than all repeats of one.
func (s Sweep) Runs() ([]Run, error) {
	if s.Dir == "" {
		return nil, fmt.Errorf("no output directory given")
	}
	if s.Repeats < 1 {
		return nil, fmt.Errorf("repeats must be at least 1, got %d", s.Repeats)
	}
	for _, l := range []struct {
		what string
		v    []int
	}{{"node counts", s.Nodes}, {"thread counts", s.Threads}} {
		if len(l.v) == 0 {
			return nil, fmt.Errorf("no %s given", l.what)
		}
		for i, n := range l.v {
			if n < 1 {
				return nil, fmt.Errorf("%s must be at least 1, got %d", l.what, n)
			}
			if slices.Contains(l.v[:i], n) {
				return nil, fmt.Errorf("%s list %d twice", l.what, n)
			}
		}
	}
	if s.Base.HasArg("summary") {
		return nil, fmt.Errorf("the xmc arguments set --summary; the sweep gives each run its own in %s", s.Dir)
	}
	name := s.Base.Name
	if name == "" {
		name = "xmc"
	}

	var runs []Run
	for rep := 1; rep <= s.Repeats; rep++ {
		for _, nodes := range s.Nodes {
			for _, threads := range s.Threads {
				tag := fmt.Sprintf("%dx%d-r%d", nodes, threads, rep)
				r := Run{
					Tag:     tag,
					Job:     s.Base,
					Summary: filepath.Join(s.Dir, tag+".json"),
					Output:  filepath.Join(s.Dir, tag+".out"),
					Script:  filepath.Join(s.Dir, tag+".sbatch"),
				}
				r.Job.Name = name + "-" + tag
				r.Job.Nodes, r.Job.CPUsPerTask = nodes, threads
				r.Job.Output = r.Output
				r.Job.Args = slices.Concat(s.Base.Args, []string{"--summary", r.Summary})
				if err := r.Job.Validate(); err != nil {
					return nil, fmt.Errorf("run %s: %w", tag, err)
				}
				runs = append(runs, r)
			}
		}
	}
	return runs, nil
}
