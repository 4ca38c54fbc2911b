package numa

import (
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestDetectCPU compares DetectCPU's features with those golang.org/x/sys/cpu
// finds by its own CPUID decoding.
func TestDetectCPU(t *testing.T) {
	info := DetectCPU()
	t.Logf("\n%s", info)
	var want map[string]bool
	switch runtime.GOARCH {
	case "amd64":
		want = map[string]bool{
			"SSE2": cpu.X86.HasSSE2, "SSE42": cpu.X86.HasSSE42, "POPCNT": cpu.X86.HasPOPCNT,
			"AVX": cpu.X86.HasAVX, "AVX2": cpu.X86.HasAVX2, "FMA3": cpu.X86.HasFMA,
			"AVX512F": cpu.X86.HasAVX512F, "AVX512BW": cpu.X86.HasAVX512BW,
			"AVX512VL": cpu.X86.HasAVX512VL, "AVX512VNNI": cpu.X86.HasAVX512VNNI,
		}
		if info.Model == "" || info.Vendor == "" {
			t.Errorf("no model or vendor: %+v", info)
		}
	case "arm64":
		want = map[string]bool{"ASIMD": cpu.ARM64.HasASIMD, "SVE": cpu.ARM64.HasSVE}
	default:
		t.Skipf("no reference feature detection for %s", runtime.GOARCH)
	}
	for name, has := range want {
		if got := slices.Contains(info.Features, name); got != has {
			t.Errorf("feature %s: DetectCPU says %v, x/sys/cpu says %v", name, got, has)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(info.Features)))) != len(info.Features) {
		t.Errorf("duplicate features: %v", info.Features)
	}
	for _, n := range []int64{info.L1D, info.L2, info.L3} {
		if n < 0 {
			t.Errorf("negative cache size: %+v", info)
		}
	}
}

func TestCPUInfoString(t *testing.T) {
	tests := []struct {
		info CPUInfo
		want string
	}{
		{
			info: CPUInfo{
				Model: "AMD EPYC 7763 64-Core Processor", Vendor: "AuthenticAMD",
				LogicalCores: 128, PhysicalCores: 64, Features: []string{"AVX", "AVX2", "FMA3"},
				L1D: 32 << 10, L2: 512 << 10, L3: 32 << 20,
			},
			want: "AMD EPYC 7763 64-Core Processor (AuthenticAMD), 128 logical / 64 physical cores\n" +
				"features: AVX AVX2 FMA3\n" +
				"caches: L1d 32 KiB, L2 512 KiB, L3 32 MiB",
		},
		{
			info: CPUInfo{},
			want: "unknown CPU, 0 logical / 0 physical cores\n" +
				"features: none detected\n" +
				"caches: L1d unknown, L2 unknown, L3 unknown",
		},
	}
	for _, tt := range tests {
		if got := tt.info.String(); got != tt.want {
			t.Errorf("got\n%s\nwant\n%s", got, tt.want)
		}
	}
}
