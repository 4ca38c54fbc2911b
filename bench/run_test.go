package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLauncherCommand(t *testing.T) {
	inproc := Launcher{Kind: InProc, XMC: "/bin/xmc"}
	mpirun := Launcher{Kind: MPIRun, XMCMPI: "/bin/xmc-mpi", MPIRun: DefaultMPIRun()}
	tests := []struct {
		ln   Launcher
		l    Layout
		want string
	}{
		{inproc, Layout{4, 2}, "/bin/xmc train --ranks 4 --threads 2 --data d.txt"},
		{mpirun, Layout{4, 2}, "mpirun --oversubscribe --bind-to none -np 4 /bin/xmc-mpi train --threads 2 --data d.txt"},
	}
	for _, tc := range tests {
		if got := strings.Join(tc.ln.Command(tc.l, "train", []string{"--data", "d.txt"}), " "); got != tc.want {
			t.Errorf("%s on %s: %q, want %q", tc.ln.Kind, tc.l, got, tc.want)
		}
	}
}

func TestLauncherCheck(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "xmc")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ln   Launcher
		err  string
	}{
		{"inproc", Launcher{Kind: InProc, XMC: bin}, ""},
		{"inproc, missing binary", Launcher{Kind: InProc, XMC: filepath.Join(dir, "nope")}, "go build"},
		{"inproc, a directory", Launcher{Kind: InProc, XMC: dir}, "no xmc binary"},
		{"mpirun, missing binary", Launcher{Kind: MPIRun, XMCMPI: filepath.Join(dir, "nope"), MPIRun: []string{"sh"}}, "make build"},
		{"mpirun, no mpirun", Launcher{Kind: MPIRun, XMCMPI: bin, MPIRun: []string{"/nonexistent/mpirun"}}, "OpenMPI"},
		{"mpirun, empty command", Launcher{Kind: MPIRun, XMCMPI: bin}, "no mpirun"},
		{"unknown", Launcher{Kind: "srun", XMC: bin}, "want inproc or mpirun"},
	}
	for _, tc := range tests {
		err := tc.ln.Check()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: Check() = %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestCheckOwnFlags(t *testing.T) {
	tests := []struct {
		args []string
		err  bool
	}{
		{[]string{"--leaf-size", "5", "--seed=3"}, false},
		{[]string{"--ranks", "2"}, true},
		{[]string{"-threads=4"}, true},
		{[]string{"--summary", "x.json"}, true},
		{[]string{"--leaf-size", "ranks"}, false}, // a value, not a flag
	}
	for _, tc := range tests {
		if err := checkOwnFlags(tc.args, "ranks", "threads", "summary"); (err != nil) != tc.err {
			t.Errorf("checkOwnFlags(%q) = %v, want error %v", tc.args, err, tc.err)
		}
	}
}

func TestRunScaleRejects(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "xmc")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ok := ScaleConfig{Launcher: Launcher{Kind: InProc, XMC: bin}, Layouts: []Layout{{1, 1}}, Repeats: 1, Dir: filepath.Join(dir, "out")}
	// A study directory that already holds a summary.
	used := filepath.Join(dir, "used")
	if err := os.MkdirAll(used, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := study()[0].WriteFile(filepath.Join(used, "1x1-r1.json")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(c *ScaleConfig)
		err  string
	}{
		{"no layouts", func(c *ScaleConfig) { c.Layouts = nil }, "no layout"},
		{"no repeats", func(c *ScaleConfig) { c.Repeats = 0 }, "--repeats"},
		{"negative warm-up", func(c *ScaleConfig) { c.Warmup = -1 }, "--warmup"},
		{"own flag", func(c *ScaleConfig) { c.TrainArgs = []string{"--threads", "3"} }, "sets --threads itself"},
		{"directory in use", func(c *ScaleConfig) { c.Dir = used }, "already holds 1 run summaries"},
		{"failing run", func(c *ScaleConfig) {}, "exit status 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			_, err := RunScale(context.Background(), c)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("RunScale error %v, want %q", err, tc.err)
			}
		})
	}
	logs, _ := filepath.Glob(filepath.Join(ok.Dir, "logs", "*.log"))
	if !slices.Equal(logs, []string{filepath.Join(ok.Dir, "logs", "1x1-r1.log")}) {
		t.Errorf("logs %v, want the failed run's", logs)
	}
}
