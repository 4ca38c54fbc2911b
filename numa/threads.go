package numa

import (
	"fmt"
	"strconv"
	"strings"
)

// ThreadCount decides how many worker threads a rank runs, in this order of
// precedence:
//
//   - flag, the value of --threads, when it is positive (0 means "decide");
//   - SLURM_CPUS_PER_TASK, which Slurm sets from --cpus-per-task;
//   - cpus, the number of CPUs in the rank's affinity mask.
//
// getenv looks up environment variables; pass os.Getenv. source names the
// setting that decided n: "--threads", "SLURM_CPUS_PER_TASK" or "affinity",
// so that xmc can log why it runs n threads. A negative flag or a
// SLURM_CPUS_PER_TASK that is not a positive integer is an error rather than
// a silent fallback, because it means the job script is wrong.
func ThreadCount(flag int, getenv func(string) string, cpus int) (n int, source string, err error) {
	switch {
	case flag > 0:
		return flag, "--threads", nil
	case flag < 0:
		return 0, "", fmt.Errorf("--threads=%d: must be positive, or 0 to decide automatically", flag)
	}
	if v := strings.TrimSpace(getenv("SLURM_CPUS_PER_TASK")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, "", fmt.Errorf("SLURM_CPUS_PER_TASK=%q: not a positive integer", v)
		}
		return n, "SLURM_CPUS_PER_TASK", nil
	}
	if cpus < 1 {
		return 0, "", fmt.Errorf("thread count: affinity mask has %d CPUs", cpus)
	}
	return cpus, "affinity", nil
}
