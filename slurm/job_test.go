package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// baseJob is a valid job with no optional field set.
func baseJob() Job {
	return Job{Nodes: 2, CPUsPerTask: 8, Exe: "/opt/xmc/bin/xmc", Args: []string{"train", "--data", "train.txt"}}
}

func TestScriptEveryOption(t *testing.T) {
	j := Job{
		Name:         "bibtex-forest",
		Nodes:        4,
		TasksPerNode: 1,
		CPUsPerTask:  32,
		Mem:          "64G",
		Time:         "1-00:30:00",
		Partition:    "compute",
		Account:      "proj42",
		Output:       "logs/%x-%j.out",
		Signal:       "USR1@300",
		ExtraLines:   []string{"--exclusive", "#SBATCH --constraint=ib"},
		Modules:      []string{"openmpi/4.1.4", "go 1.26"},
		Exe:          "/home/me/bin/xmc",
		Args:         []string{"train", "--algo", "forest", "--data", "my data/train.txt", "--trees", "100", "--model-out", "it's.model"},
	}
	want := `#!/bin/bash
#SBATCH --job-name=bibtex-forest
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=32
#SBATCH --mem=64G
#SBATCH --time=1-00:30:00
#SBATCH --partition=compute
#SBATCH --account=proj42
#SBATCH --output=logs/%x-%j.out
#SBATCH --signal=USR1@300
#SBATCH --exclusive
#SBATCH --constraint=ib

# Rendered by xmc slurm. Each rank runs SLURM_CPUS_PER_TASK pinned worker threads.
# SIGUSR1 300 s before the time limit makes xmc stop cleanly and write its summary.
set -eu
module load openmpi/4.1.4
module load 'go 1.26'
export OMP_NUM_THREADS="$SLURM_CPUS_PER_TASK" GOMAXPROCS="$SLURM_CPUS_PER_TASK"
exec srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task="$SLURM_CPUS_PER_TASK" /home/me/bin/xmc train --algo forest --data 'my data/train.txt' --trees 100 --model-out 'it'\''s.model'
`
	got, err := j.Script()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("script:\n%s\nwant:\n%s", got, want)
	}
	checkSyntax(t, got)
}

// checkSyntax has bash parse script without running it.
func checkSyntax(t *testing.T, script string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Log("no bash: syntax not checked")
		return
	}
	cmd := exec.Command("bash", "-n")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("bash -n: %v\n%s\nscript:\n%s", err, out, script)
	}
}

func TestScriptOptions(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(j *Job)
		want    []string // lines the script must have
		notWant []string // substrings it must not have
	}{
		{
			name: "defaults",
			edit: func(j *Job) {},
			want: []string{
				"#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1", "#SBATCH --cpus-per-task=8",
				`exec srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task="$SLURM_CPUS_PER_TASK" /opt/xmc/bin/xmc train --data train.txt`,
			},
			notWant: []string{"--job-name", "--mem", "--time", "--partition", "--account", "--output", "--signal", "SIGUSR1", "module"},
		},
		{
			name: "tasks per node",
			edit: func(j *Job) { j.Nodes, j.TasksPerNode = 1, 2 },
			want: []string{"#SBATCH --nodes=1", "#SBATCH --ntasks-per-node=2"},
		},
		{
			name: "srun gets the signal in its steps",
			edit: func(j *Job) { j.Signal = "TERM@60" },
			want: []string{"#SBATCH --signal=TERM@60", "# SIGTERM 60 s before the time limit makes xmc stop cleanly and write its summary."},
		},
		{
			name: "SIG prefix",
			edit: func(j *Job) { j.Signal = "SIGUSR1@90" },
			want: []string{"#SBATCH --signal=SIGUSR1@90", "# SIGUSR1 90 s before the time limit makes xmc stop cleanly and write its summary."},
		},
		{
			name: "mpirun forwards the batch shell's signal",
			edit: func(j *Job) { j.Launcher, j.Signal = Mpirun, "USR1@120" },
			want: []string{
				"#SBATCH --signal=B:USR1@120",
				`exec mpirun -np "$SLURM_NTASKS" --bind-to none -x OMP_NUM_THREADS -x GOMAXPROCS --mca oob_tcp_keepalive_time 10 --mca oob_tcp_keepalive_intvl 5 --mca oob_tcp_keepalive_probes 3 /opt/xmc/bin/xmc train --data train.txt`,
			},
			notWant: []string{"srun"},
		},
		{
			name:    "direct: xmc is the batch shell",
			edit:    func(j *Job) { j.Nodes, j.Launcher, j.Signal = 1, Direct, "INT@30" },
			want:    []string{"#SBATCH --signal=B:INT@30", "exec /opt/xmc/bin/xmc train --data train.txt"},
			notWant: []string{"srun", "mpirun"},
		},
		{
			name: "modules in order, quoted",
			edit: func(j *Job) { j.Modules = []string{"gcc/12.2", "$(rm -rf ~)"} },
			want: []string{"module load gcc/12.2", "module load '$(rm -rf ~)'"},
		},
		{
			name: "extra lines",
			edit: func(j *Job) { j.ExtraLines = []string{"  #SBATCH   --qos=long ", "--gres=gpu:1", "-C ib"} },
			want: []string{"#SBATCH --qos=long", "#SBATCH --gres=gpu:1", "#SBATCH -C ib"},
		},
		{
			name: "requeued: srun's status kept, the job requeued on xmc's status 3",
			edit: func(j *Job) { j.Signal, j.Requeue = "USR1@120", 4 },
			want: []string{
				"#SBATCH --requeue", "#SBATCH --open-mode=append", "status=0",
				`srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task="$SLURM_CPUS_PER_TASK" /opt/xmc/bin/xmc train --data train.txt || status=$?`,
				`if [ "$status" -eq 3 ] && [ "${SLURM_RESTART_COUNT:-0}" -lt 4 ]; then`,
				`	scontrol requeue "$SLURM_JOB_ID" || echo "xmc slurm: scontrol requeue failed: submit the job again to resume" >&2`,
				`exit "$status"`,
			},
			notWant: []string{"exec ", "trap"},
		},
		{
			name: "requeued under mpirun: the batch shell passes the signal on",
			edit: func(j *Job) { j.Launcher, j.Signal, j.Requeue = Mpirun, "TERM@60", 1 },
			want: []string{
				"#SBATCH --signal=B:TERM@60", "#SBATCH --requeue", `trap 'kill -TERM "$pid" 2>/dev/null || :' TERM`,
				`mpirun -np "$SLURM_NTASKS" --bind-to none -x OMP_NUM_THREADS -x GOMAXPROCS --mca oob_tcp_keepalive_time 10 --mca oob_tcp_keepalive_intvl 5 --mca oob_tcp_keepalive_probes 3 /opt/xmc/bin/xmc train --data train.txt &`,
			},
			notWant: []string{"exec "},
		},
		{
			name: "executable path quoted",
			edit: func(j *Job) { j.Exe = "/home/my user/xmc" },
			want: []string{`exec srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task="$SLURM_CPUS_PER_TASK" '/home/my user/xmc' train --data train.txt`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := baseJob()
			tt.edit(&j)
			got, err := j.Script()
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(got, "\n")
			for _, w := range tt.want {
				found := false
				for _, l := range lines {
					found = found || l == w
				}
				if !found {
					t.Errorf("no line %q in\n%s", w, got)
				}
			}
			for _, nw := range tt.notWant {
				if strings.Contains(got, nw) {
					t.Errorf("script has %q:\n%s", nw, got)
				}
			}
			checkSyntax(t, got)
		})
	}
}

func TestScriptValidation(t *testing.T) {
	tests := []struct {
		name string
		edit func(j *Job)
		want string // in the error
	}{
		{"no nodes", func(j *Job) { j.Nodes = 0 }, "nodes must be at least 1, got 0"},
		{"negative tasks", func(j *Job) { j.TasksPerNode = -1 }, "tasks per node must be at least 1, got -1"},
		{"no CPUs", func(j *Job) { j.CPUsPerTask = 0 }, "CPUs per task must be at least 1, got 0"},
		{"unknown launcher", func(j *Job) { j.Launcher = "aprun" }, `unknown launcher "aprun"`},
		{"direct on two nodes", func(j *Job) { j.Launcher = Direct }, "runs one task on one node, not 2 nodes"},
		{"direct with two tasks", func(j *Job) { j.Nodes, j.TasksPerNode, j.Launcher = 1, 2, Direct }, "not 1 nodes with 2 tasks each"},
		{"memory unit", func(j *Job) { j.Mem = "64GB" }, `memory "64GB"`},
		{"memory fraction", func(j *Job) { j.Mem = "1.5G" }, `memory "1.5G"`},
		{"time seconds over 59", func(j *Job) { j.Time = "1:00:60" }, `field "60" is out of range`},
		{"time text", func(j *Job) { j.Time = "1h" }, `field "1h" is not a number`},
		{"time zero", func(j *Job) { j.Time = "00:00:00" }, "the limit is zero"},
		{"signal with B:", func(j *Job) { j.Signal = "B:USR1@120" }, "without a B: or R: prefix"},
		{"signal xmc ignores", func(j *Job) { j.Signal = "USR2@120" }, "USR1, TERM, INT"},
		{"signal without time", func(j *Job) { j.Signal = "USR1" }, "want SIG@SECONDS"},
		{"signal too early", func(j *Job) { j.Signal = "USR1@70000" }, "at most 65535 s"},
		{"signal after the limit", func(j *Job) { j.Time, j.Signal = "2", "USR1@120" }, "would come at the start of the job: 2m0s is not less than the time limit 2"},
		{"job name with space", func(j *Job) { j.Name = "my job" }, `job name "my job": spaces, quotes`},
		{"partition with quote", func(j *Job) { j.Partition = `"gpu"` }, "partition"},
		{"account with newline", func(j *Job) { j.Account = "a\nb" }, "account"},
		{"output with space", func(j *Job) { j.Output = "my logs/%j.out" }, "output path"},
		{"extra line not an option", func(j *Job) { j.ExtraLines = []string{"exclusive"} }, "want an sbatch option"},
		{"extra line two lines", func(j *Job) { j.ExtraLines = []string{"--exclusive\n#SBATCH --qos=x"} }, "single line"},
		{"extra line sets nodes", func(j *Job) { j.ExtraLines = []string{"--nodes=3"} }, "--nodes is set by the job's Nodes"},
		{"extra line sets short time", func(j *Job) { j.ExtraLines = []string{"-t10"} }, "-t is set by the job's Time"},
		{"extra line sets signal", func(j *Job) { j.ExtraLines = []string{"#SBATCH --signal B:USR1@60"} }, "--signal is set by the job's Signal"},
		{"empty module", func(j *Job) { j.Modules = []string{" "} }, "module name"},
		{"no executable", func(j *Job) { j.Exe = "" }, "no xmc executable"},
		{"no command", func(j *Job) { j.Args = nil }, "no xmc command"},
		{"NUL in argument", func(j *Job) { j.Args = []string{"train", "a\x00b"} }, "NUL"},
		{"array spec", func(j *Job) { j.Array = "1-5,x" }, `array "1-5,x": want task ids`},
		{"task without array", func(j *Job) { j.Args = []string{"train", "--seed", "{task}"} }, "give the job an array of tasks"},
		{"extra line sets array", func(j *Job) { j.ExtraLines = []string{"--array=1-3"} }, "--array is set by the job's Array"},
		{"negative requeue", func(j *Job) { j.Signal, j.Requeue = "USR1@60", -1 }, "requeue -1: want how many times"},
		{"requeue without signal", func(j *Job) { j.Requeue = 2 }, "needs the signal that stops xmc cleanly"},
		{"extra line sets requeue", func(j *Job) { j.ExtraLines = []string{"--requeue"} }, "--requeue is set by the job's Requeue"},
		{"extra line sets open mode", func(j *Job) { j.ExtraLines = []string{"--open-mode=truncate"} }, "--open-mode is set by the job's Requeue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := baseJob()
			tt.edit(&j)
			_, err := j.Script()
			if err == nil {
				t.Fatalf("no error, want one with %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestScriptPassesArguments runs a rendered script (Direct launcher, with
// printf standing in for xmc) and checks every argument arrives intact.
func TestScriptPassesArguments(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	args := []string{"%s|\n", "plain", "two words", "it's", `"double"`, "$HOME", "`id`", "$(id)", "a\nb", "*", "~", "", "tab\there", "ünï", `back\slash`, "-n"}
	j := Job{Nodes: 1, CPUsPerTask: 1, Launcher: Direct, Modules: nil, Exe: "printf", Args: args}
	script, err := j.Script()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "job.sbatch")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", path)
	cmd.Env = append(os.Environ(), "SLURM_CPUS_PER_TASK=3")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run script: %v\n%s", err, script)
	}
	want := strings.Join(args[1:], "|\n") + "|\n"
	if string(out) != want {
		t.Errorf("arguments arrived as %q, want %q", out, want)
	}
}

// TestScriptArray runs a job array's rendered script (Direct launcher,
// printf standing in for xmc) as task 7 and checks that {task} became 7,
// in arguments of its own and inside others, quoted as they need.
func TestScriptArray(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	args := []string{"%s|", "--seed", "{task}", "--model-out", "run {task}/m{task}.model", "{task}$HOME"}
	j := Job{Nodes: 1, CPUsPerTask: 1, Launcher: Direct, Array: "1-10%2", Exe: "printf", Args: args}
	script, err := j.Script()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(script, "#SBATCH --array=1-10%2\n") {
		t.Errorf("no array line in:\n%s", script)
	}
	path := filepath.Join(t.TempDir(), "job.sbatch")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", path)
	cmd.Env = append(os.Environ(), "SLURM_CPUS_PER_TASK=1", "SLURM_ARRAY_TASK_ID=7")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run script: %v\n%s", err, script)
	}
	if want := "--seed|7|--model-out|run 7/m7.model|7$HOME|"; string(out) != want {
		t.Errorf("arguments arrived as %q, want %q", out, want)
	}
}

func TestScriptRequiresSlurmEnvironment(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	j := Job{Nodes: 1, CPUsPerTask: 1, Launcher: Direct, Exe: "true", Args: []string{"train"}}
	script, err := j.Script()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash")
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "SLURM_CPUS_PER_TASK") {
		t.Errorf("outside Slurm the script ran (err %v, output %q); want it to stop on the unset SLURM_CPUS_PER_TASK", err, out)
	}
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"train", "train"},
		{"--data=testdata/bibtex/train.txt", "'--data=testdata/bibtex/train.txt'"},
		{"/a/b-c_d.e,f:g@h%i+j", "/a/b-c_d.e,f:g@h%i+j"},
		{"", "''"},
		{"two words", "'two words'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
		{"a;b", "'a;b'"},
		{"~", "'~'"},
		{"*.txt", "'*.txt'"},
		{"a\nb", "'a\nb'"},
		{"ünï", "'ünï'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh: quoting not checked against a shell")
	}
	for _, tt := range tests {
		out, err := exec.Command("sh", "-c", "printf %s "+Quote(tt.in)).Output()
		if err != nil {
			t.Fatalf("sh with %q: %v", Quote(tt.in), err)
		}
		if string(out) != tt.in {
			t.Errorf("sh read %q as %q, want %q", Quote(tt.in), out, tt.in)
		}
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "30", want: 30 * time.Minute},
		{in: "90", want: 90 * time.Minute},
		{in: "5:30", want: 5*time.Minute + 30*time.Second},
		{in: "01:00:00", want: time.Hour},
		{in: "48:00:00", want: 48 * time.Hour},
		{in: "2-12", want: 60 * time.Hour},
		{in: "1-00:30", want: 24*time.Hour + 30*time.Minute},
		{in: "0-00:00:10", want: 10 * time.Second},
		{in: "", err: "not a number"},
		{in: "1:2:3:4", err: "too many fields"},
		{in: "-5", err: "too many fields"},
		{in: "1-", err: "not a number"},
		{in: "1-2:3:4:5", err: "too many fields"},
		{in: "1:60", err: "out of range"},
		{in: "1:60:00", err: "out of range"},
		{in: "1-24", err: "out of range"},
		{in: "+5", err: "not a number"},
		{in: "1.5", err: "not a number"},
		{in: "99999999999", err: "too large"},
		{in: "0", err: "zero"},
		{in: "UNLIMITED", err: "not a number"},
	}
	for _, tt := range tests {
		got, err := ParseTime(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseTime(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestOutputPath(t *testing.T) {
	tests := []struct{ name, output, want string }{
		{"job", "", "slurm-123.out"},
		{"job", "logs/%x-%j.out", "logs/job-123.out"},
		{"job", "/s/%u/%A.log", "/s/alice/123.log"},
		{"job", "100%%-%j", "100%-123"},
		{"job", "node-%N-task-%t.out", "node-%N-task-%t.out"},
		{"job", "trailing%", "trailing%"},
	}
	for _, tt := range tests {
		j := Job{Name: tt.name, Output: tt.output}
		if got := j.OutputPath("123", "alice"); got != tt.want {
			t.Errorf("OutputPath of %q = %q, want %q", tt.output, got, tt.want)
		}
	}
}

func TestHasArg(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"train", "--summary", "s.json"}, true},
		{[]string{"train", "-summary=s.json"}, true},
		{[]string{"train", "--summary-dir", "x"}, false},
		{[]string{"train", "--data", "summary"}, false},
	}
	for _, tt := range tests {
		if got := (Job{Args: tt.args}).HasArg("summary"); got != tt.want {
			t.Errorf("HasArg(summary) of %q = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// TestScriptRequeue runs a requeued job's rendered script (Direct launcher)
// with a stand-in for xmc that exits with the status it is told, or with 3
// once it receives the signal that the script passes on to it, and a
// stand-in for scontrol that records its arguments: the job is requeued
// when xmc stopped cleanly and restarts are left, and the script exits with
// xmc's status.
func TestScriptRequeue(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	fakeXMC := filepath.Join(dir, "xmc")
	// With FAKE_EXIT=signal it waits for SIGUSR1 (ready once its trap is
	// set), then exits 3, as xmc does when it stops cleanly; without the
	// signal it gives up after 10 s with 9.
	writeExecutable(t, fakeXMC, `#!/bin/bash
if [ "$FAKE_EXIT" = signal ]; then
	trap 'exit 3' USR1
	touch "$FAKE_DIR/ready"
	for i in $(seq 200); do sleep 0.05; done
	exit 9
fi
exit "$FAKE_EXIT"
`)
	writeExecutable(t, filepath.Join(dir, "scontrol"), "#!/bin/bash\necho \"$*\" >> \"$FAKE_DIR/scontrol.log\"\n")
	j := Job{Nodes: 1, CPUsPerTask: 1, Launcher: Direct, Signal: "USR1@60", Requeue: 2, Exe: fakeXMC, Args: []string{"train"}}
	script, err := j.Script()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "job.sbatch")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		exit     string // the stand-in's FAKE_EXIT
		restarts string // SLURM_RESTART_COUNT, "" unset
		status   int
		requeued bool
	}{
		{"stopped cleanly", "3", "", 3, true},
		{"stopped cleanly, restarted once", "3", "1", 3, true},
		{"stopped cleanly, no restart left", "3", "2", 3, false},
		{"finished", "0", "1", 0, false},
		{"failed", "1", "", 1, false},
		{"signal passed on", "signal", "", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(dir, "scontrol.log")
			os.Remove(filepath.Join(dir, "ready"))
			cmd := exec.Command("bash", path)
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "SLURM_CPUS_PER_TASK=1", "SLURM_JOB_ID=42",
				"FAKE_EXIT="+tc.exit, "FAKE_DIR="+dir)
			if tc.restarts != "" {
				cmd.Env = append(cmd.Env, "SLURM_RESTART_COUNT="+tc.restarts)
			}
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.exit == "signal" {
				deadline := time.Now().Add(10 * time.Second)
				for !exists(filepath.Join(dir, "ready")) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				cmd.Process.Signal(syscall.SIGUSR1)
			}
			err := cmd.Wait()
			status := 0
			if ee, ok := err.(*exec.ExitError); ok {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			calls, _ := os.ReadFile(log)
			os.Remove(log)
			if status != tc.status || (string(calls) == "requeue 42\n") != tc.requeued {
				t.Errorf("exit %d, scontrol calls %q; want %d, requeued %v\n%s", status, calls, tc.status, tc.requeued, out.String())
			}
		})
	}
}

func writeExecutable(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

// exists reports whether a file is at path.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
