package traintest

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU returns the CPU time the process has used so far. On a shared
// machine it is a steadier measure than wall time, which also counts the
// time other processes held the CPU.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU reports the process CPU time per iteration since start as the
// cpu-ns/op metric.
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(ProcessCPU()-start)/float64(b.N), "cpu-ns/op")
}
