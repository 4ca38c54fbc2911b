package bench

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dustin/go-humanize"
)

func runShell(script string) (string, error) {
	out, err := exec.Command("/bin/sh", "-c", script).Output()
	return string(out), err
}

func TestParsePeakRSS(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want []RSSRecord
		err  bool
	}{
		{"none", "training...\ndone\n", nil, false},
		{"two ranks among output", "p@1 : 60\n" +
			"xmc-bench-peakrss: rank=1 host=n2 pid=42 peak_rss_kib=2048 floor_kib=1024 exit=0\n" +
			"[1,0]<stderr>:xmc-bench-peakrss: rank=0 host=n1 pid=41 peak_rss_kib=4096 floor_kib=1024 exit=3\n",
			[]RSSRecord{{Rank: "1", Host: "n2", PID: 42, PeakRSSBytes: 2 << 20, FloorBytes: 1 << 20},
				{Rank: "0", Host: "n1", PID: 41, PeakRSSBytes: 4 << 20, FloorBytes: 1 << 20, Exit: 3}}, false},
		{"unknown fields ignored", "xmc-bench-peakrss: rank=- host=h pid=1 peak_rss_kib=1 floor_kib=1 exit=0 extra=yes\n",
			[]RSSRecord{{Rank: "-", Host: "h", PID: 1, PeakRSSBytes: 1024, FloorBytes: 1024}}, false},
		{"bad number", "xmc-bench-peakrss: rank=0 host=h pid=1 peak_rss_kib=12x floor_kib=1 exit=0\n", nil, true},
		{"truncated", "xmc-bench-peakrss: rank=0 host=h pid=1\n", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePeakRSS([]byte(tc.out))
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if tc.err {
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("records %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("record %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestLauncherRank(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "-"},
		{map[string]string{"OMPI_COMM_WORLD_RANK": "3", "SLURM_PROCID": "9"}, "3"},
		{map[string]string{"PMIX_RANK": "2"}, "2"},
		{map[string]string{"SLURM_PROCID": "7"}, "7"},
	}
	for _, tc := range tests {
		if got := launcherRank(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("launcherRank(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

// TestExecPeakRSS measures real children: this test binary itself,
// allocating and touching a known amount of memory (see TestMain), and
// shell commands that fail or are killed.
func TestExecPeakRSS(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		argv     []string
		env      string
		code     int
		minBytes int64
		stdout   string
	}{
		{"allocates 160 MiB", []string{self}, helperAllocEnv + "=160", 0, 160 << 20, ""},
		{"output passes through", []string{"/bin/sh", "-c", "echo hello"}, "", 0, 0, "hello\n"},
		{"exit status", []string{"/bin/sh", "-c", "exit 3"}, "", 3, 0, ""},
		{"killed by a signal", []string{"/bin/sh", "-c", "kill -9 $$"}, "", 128 + 9, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				k, v, _ := strings.Cut(tc.env, "=")
				t.Setenv(k, v)
			}
			var stdout, stderr, report bytes.Buffer
			code, err := ExecPeakRSS(tc.argv, nil, &stdout, &stderr, &report)
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if stdout.String() != tc.stdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tc.stdout)
			}
			recs, err := ParsePeakRSS(report.Bytes())
			if err != nil || len(recs) != 1 {
				t.Fatalf("report %q: %v records, error %v", report.String(), len(recs), err)
			}
			r := recs[0]
			if r.Exit != tc.code || r.PID <= 0 || r.Rank != "-" || r.FloorBytes <= 0 || r.PeakRSSBytes <= 0 {
				t.Errorf("record %+v", r)
			}
			if r.PeakRSSBytes < tc.minBytes {
				t.Errorf("peak %s, want at least %s", humanize.IBytes(uint64(r.PeakRSSBytes)), humanize.IBytes(uint64(tc.minBytes)))
			}
		})
	}
	if _, err := ExecPeakRSS(nil, nil, nil, nil, &bytes.Buffer{}); err == nil {
		t.Error("ExecPeakRSS with no command succeeded")
	}
	if _, err := ExecPeakRSS([]string{"/nonexistent/prog"}, nil, nil, nil, &bytes.Buffer{}); err == nil {
		t.Error("ExecPeakRSS of a missing program succeeded")
	}
}
