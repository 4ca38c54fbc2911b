package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// PeakRSSMarker begins the line that ExecPeakRSS writes and ParsePeakRSS
// looks for in a job's output.
const PeakRSSMarker = "xmc-bench-peakrss:"

// ExecPeakRSS runs argv with the given standard streams, passes SIGINT and
// SIGTERM on to it, and when it ends writes one line to report:
//
//	xmc-bench-peakrss: rank=1 host=n12 pid=4242 peak_rss_kib=51234 floor_kib=9800 exit=0
//
// The peak is the child's ru_maxrss from wait4: the kernel's high-water
// mark of the child's resident memory, the counter xmc reports for its own
// ranks (getrusage). The kernel carries the high-water mark across exec,
// and Go starts a child in its parent's address space (vfork), so the
// figure is the larger of the child's true peak and this process's own
// resident size when it started the child. That floor, about 10 MiB, is
// reported as floor_kib: a peak at the floor means "at most the floor". Under mpirun every rank runs inside its own
// ExecPeakRSS ("mpirun -np 4 xmc-bench peakrss -- prog ..."), which measures
// each rank, where the rusage of mpirun's children would give one figure
// for the largest of them. The rank comes from the launcher's environment
// (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID; "-" when
// none is set). ExecPeakRSS returns the child's exit code, 128+n when
// signal n killed it.
func ExecPeakRSS(argv []string, stdin io.Reader, stdout, stderr, report io.Writer) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("peakrss: no command given")
	}
	// The parent-death signal follows the thread that started the child;
	// keep that thread until the child is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	setParentDeathSignal(cmd)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("peakrss: %w", err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return 0, fmt.Errorf("peakrss: %w", err)
	}
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	var kib int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		kib = int64(ru.Maxrss) // Linux reports KiB
	}
	var self syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return code, fmt.Errorf("peakrss: %w", err)
	}
	host, _ := os.Hostname()
	_, err = fmt.Fprintf(report, "%s rank=%s host=%s pid=%d peak_rss_kib=%d floor_kib=%d exit=%d\n",
		PeakRSSMarker, launcherRank(os.Getenv), host, cmd.ProcessState.Pid(), kib, int64(self.Maxrss), code)
	return code, err
}

// launcherRank returns the process's rank as its launcher set it, or "-".
func launcherRank(getenv func(string) string) string {
	for _, k := range []string{"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return "-"
}

// RSSRecord is one process's peak memory as ExecPeakRSS reported it.
type RSSRecord struct {
	Rank         string `json:"rank"` // "-" when no launcher set one
	Host         string `json:"host"`
	PID          int    `json:"pid"`
	PeakRSSBytes int64  `json:"peak_rss_bytes"`
	// FloorBytes is the smallest peak the measurement can resolve (see
	// ExecPeakRSS).
	FloorBytes int64 `json:"floor_bytes"`
	Exit       int   `json:"exit"`
}

// ParsePeakRSS returns the records ExecPeakRSS wrote into out, a job's
// output, in order of appearance. A marker may follow a prefix on its line
// (mpirun --tag-output adds one). A line with the marker but a malformed
// record is an error, since it would silently drop a rank's figure.
func ParsePeakRSS(out []byte) ([]RSSRecord, error) {
	var recs []RSSRecord
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		_, rest, found := strings.Cut(sc.Text(), PeakRSSMarker)
		if !found {
			continue
		}
		var r RSSRecord
		seen := 0
		for _, field := range strings.Fields(rest) {
			k, v, _ := strings.Cut(field, "=")
			var err error
			switch k {
			case "rank":
				r.Rank = v
			case "host":
				r.Host = v
			case "pid":
				r.PID, err = strconv.Atoi(v)
			case "peak_rss_kib":
				r.PeakRSSBytes, err = parseKiB(v)
			case "floor_kib":
				r.FloorBytes, err = parseKiB(v)
			case "exit":
				r.Exit, err = strconv.Atoi(v)
			default:
				continue
			}
			if err != nil {
				return recs, fmt.Errorf("peak RSS record on output line %d: %s: %w", line, field, err)
			}
			seen++
		}
		if seen != 6 {
			return recs, fmt.Errorf("peak RSS record on output line %d is incomplete: %q", line, sc.Text())
		}
		recs = append(recs, r)
	}
	return recs, sc.Err()
}

func parseKiB(s string) (int64, error) {
	kib, err := strconv.ParseInt(s, 10, 64)
	return kib * 1024, err
}
