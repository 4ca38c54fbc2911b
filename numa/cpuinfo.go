package numa

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/klauspost/cpuid/v2"
)

// CPUInfo describes the processor for xmc info and benchmark reports: the
// vector extensions and cache sizes decide how fast the sparse kernels run.
type CPUInfo struct {
	// Model is the brand string, e.g. "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz".
	Model string
	// Vendor is the raw vendor string, e.g. "GenuineIntel".
	Vendor string
	// LogicalCores and PhysicalCores count one socket's hardware threads and
	// cores; 0 when undetectable.
	LogicalCores, PhysicalCores int
	// Features lists the vector and matrix extensions present, from oldest to
	// newest, by their cpuid names ("AVX2", "FMA3", "AVX512F", ...).
	Features []string
	// L1D, L2 and L3 are the data cache sizes in bytes, 0 when undetectable.
	// L1D and L2 are usually per core, L3 shared by a socket or a core complex.
	L1D, L2, L3 int64
}

// DetectCPU describes the processor this process runs on, as reported by the
// CPUID instruction (or the system's equivalent on other architectures).
func DetectCPU() CPUInfo {
	return cpuInfoFrom(cpuid.CPU)
}

// cpuInfoFrom converts cpuid's description of a CPU.
func cpuInfoFrom(c cpuid.CPUInfo) CPUInfo {
	vector := []cpuid.FeatureID{
		// x86
		cpuid.SSE2, cpuid.SSE3, cpuid.SSSE3, cpuid.SSE4, cpuid.SSE42, cpuid.POPCNT,
		cpuid.AVX, cpuid.F16C, cpuid.FMA3, cpuid.AVX2, cpuid.BMI2,
		cpuid.AVX512F, cpuid.AVX512DQ, cpuid.AVX512CD, cpuid.AVX512BW, cpuid.AVX512VL,
		cpuid.AVX512VNNI, cpuid.AVX512BF16, cpuid.AVX512FP16, cpuid.AVXVNNI, cpuid.AVX10,
		cpuid.AMXTILE, cpuid.AMXBF16, cpuid.AMXINT8,
		// arm64
		cpuid.ASIMD, cpuid.ASIMDHP, cpuid.SVE, cpuid.SVE2,
	}
	info := CPUInfo{
		Model:         strings.TrimSpace(c.BrandName),
		Vendor:        c.VendorString,
		LogicalCores:  max(c.LogicalCores, 0),
		PhysicalCores: max(c.PhysicalCores, 0),
		L1D:           int64(max(c.Cache.L1D, 0)),
		L2:            int64(max(c.Cache.L2, 0)),
		L3:            int64(max(c.Cache.L3, 0)),
	}
	for _, f := range vector {
		if c.Supports(f) {
			info.Features = append(info.Features, f.String())
		}
	}
	return info
}

// String describes the CPU for humans on three lines: model and cores,
// features, caches.
func (c CPUInfo) String() string {
	var b strings.Builder
	model := c.Model
	if model == "" {
		model = "unknown CPU"
	}
	b.WriteString(model)
	if c.Vendor != "" {
		fmt.Fprintf(&b, " (%s)", c.Vendor)
	}
	fmt.Fprintf(&b, ", %d logical / %d physical cores\n", c.LogicalCores, c.PhysicalCores)
	features := strings.Join(c.Features, " ")
	if features == "" {
		features = "none detected"
	}
	fmt.Fprintf(&b, "features: %s\n", features)
	fmt.Fprintf(&b, "caches: L1d %s, L2 %s, L3 %s", cacheSize(c.L1D), cacheSize(c.L2), cacheSize(c.L3))
	return b.String()
}

// cacheSize formats a cache size in bytes, or "unknown" for 0.
func cacheSize(n int64) string {
	if n <= 0 {
		return "unknown"
	}
	return humanize.IBytes(uint64(n))
}
