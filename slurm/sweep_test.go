package slurm

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSweepRuns(t *testing.T) {
	base := Job{
		Name: "bib", Time: "30", Signal: "USR1@120", Exe: "/bin/xmc",
		Args: []string{"train", "--data", "train.txt"},
	}
	s := Sweep{Base: base, Nodes: []int{1, 4}, Threads: []int{16, 32}, Repeats: 2, Dir: "/scratch/sweep"}
	runs, err := s.Runs()
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, r := range runs {
		tags = append(tags, r.Tag)
	}
	// Every combination once, then again.
	wantTags := []string{"1x16-r1", "1x32-r1", "4x16-r1", "4x32-r1", "1x16-r2", "1x32-r2", "4x16-r2", "4x32-r2"}
	if !slices.Equal(tags, wantTags) {
		t.Fatalf("tags %q, want %q", tags, wantTags)
	}
	r := runs[3] // 4x32-r1
	if r.Job.Nodes != 4 || r.Job.CPUsPerTask != 32 {
		t.Errorf("%s: %d nodes, %d CPUs per task; want 4, 32", r.Tag, r.Job.Nodes, r.Job.CPUsPerTask)
	}
	if r.Job.Name != "bib-4x32-r1" || r.Job.Time != "30" || r.Job.Signal != "USR1@120" {
		t.Errorf("%s: name %q time %q signal %q; want the base's with the tag", r.Tag, r.Job.Name, r.Job.Time, r.Job.Signal)
	}
	for _, p := range []struct{ got, want string }{
		{r.Summary, "/scratch/sweep/4x32-r1.json"},
		{r.Output, "/scratch/sweep/4x32-r1.out"},
		{r.Job.Output, "/scratch/sweep/4x32-r1.out"},
		{r.Script, "/scratch/sweep/4x32-r1.sbatch"},
	} {
		if p.got != filepath.FromSlash(p.want) {
			t.Errorf("%s: path %q, want %q", r.Tag, p.got, p.want)
		}
	}
	wantArgs := []string{"train", "--data", "train.txt", "--summary", "/scratch/sweep/4x32-r1.json"}
	if !slices.Equal(r.Job.Args, wantArgs) {
		t.Errorf("%s: args %q, want %q", r.Tag, r.Job.Args, wantArgs)
	}
	if !slices.Equal(base.Args, []string{"train", "--data", "train.txt"}) {
		t.Errorf("Runs changed the base job's arguments to %q", base.Args)
	}
	script, err := r.Job.Script()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(script, "#SBATCH --nodes=4\n") || !strings.Contains(script, "--summary /scratch/sweep/4x32-r1.json\n") {
		t.Errorf("script of %s:\n%s", r.Tag, script)
	}
}

func TestSweepDefaultName(t *testing.T) {
	s := Sweep{Base: Job{Exe: "xmc", Args: []string{"train"}}, Nodes: []int{2}, Threads: []int{1}, Repeats: 1, Dir: "d"}
	runs, err := s.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Job.Name != "xmc-2x1-r1" {
		t.Errorf("runs %+v, want one named xmc-2x1-r1", runs)
	}
}

func TestSweepErrors(t *testing.T) {
	ok := Sweep{Base: baseJob(), Nodes: []int{1, 2}, Threads: []int{4}, Repeats: 1, Dir: "out"}
	tests := []struct {
		name string
		edit func(s *Sweep)
		want string
	}{
		{"no directory", func(s *Sweep) { s.Dir = "" }, "no output directory"},
		{"no repeats", func(s *Sweep) { s.Repeats = 0 }, "repeats must be at least 1, got 0"},
		{"no nodes", func(s *Sweep) { s.Nodes = nil }, "no node counts"},
		{"no threads", func(s *Sweep) { s.Threads = []int{} }, "no thread counts"},
		{"zero nodes", func(s *Sweep) { s.Nodes = []int{1, 0} }, "node counts must be at least 1, got 0"},
		{"duplicate threads", func(s *Sweep) { s.Threads = []int{4, 8, 4} }, "thread counts list 4 twice"},
		{"own summary", func(s *Sweep) { s.Base.Args = []string{"train", "--summary=x.json"} }, "set --summary"},
		{"invalid base", func(s *Sweep) { s.Base.Mem = "lots" }, `run 1x4-r1: memory "lots"`},
		{"directory with space", func(s *Sweep) { s.Dir = "my out" }, "output path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			s.Base.Args = slices.Clone(ok.Base.Args)
			tt.edit(&s)
			_, err := s.Runs()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}
