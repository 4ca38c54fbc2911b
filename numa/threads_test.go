package numa

import "testing"

func TestThreadCount(t *testing.T) {
	tests := []struct {
		name       string
		flag       int
		slurm      string
		cpus       int
		want       int
		wantSource string
		wantErr    bool
	}{
		{name: "flag wins", flag: 8, slurm: "4", cpus: 2, want: 8, wantSource: "--threads"},
		{name: "flag above cpus", flag: 64, cpus: 2, want: 64, wantSource: "--threads"},
		{name: "slurm", slurm: "4", cpus: 2, want: 4, wantSource: "SLURM_CPUS_PER_TASK"},
		{name: "slurm with space", slurm: " 16\n", cpus: 2, want: 16, wantSource: "SLURM_CPUS_PER_TASK"},
		{name: "affinity", cpus: 2, want: 2, wantSource: "affinity"},
		{name: "blank slurm is unset", slurm: "  ", cpus: 3, want: 3, wantSource: "affinity"},
		{name: "negative flag", flag: -1, cpus: 2, wantErr: true},
		{name: "slurm not a number", slurm: "four", cpus: 2, wantErr: true},
		{name: "slurm zero", slurm: "0", cpus: 2, wantErr: true},
		{name: "slurm negative", slurm: "-2", cpus: 2, wantErr: true},
		{name: "slurm list", slurm: "2(x3)", cpus: 2, wantErr: true},
		{name: "no cpus", cpus: 0, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(key string) string {
				if key == "SLURM_CPUS_PER_TASK" {
					return tt.slurm
				}
				return ""
			}
			n, source, err := ThreadCount(tt.flag, getenv, tt.cpus)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ThreadCount = %d, %q, want error", n, source)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.want || source != tt.wantSource {
				t.Errorf("ThreadCount = %d, %q, want %d, %q", n, source, tt.want, tt.wantSource)
			}
		})
	}
}
