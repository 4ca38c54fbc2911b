package slurm

import "testing"

func TestIsJobID(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"1", true},
		{"4242", true},
		{"", false},
		{"0", false},
		{"012", false},
		{"12a", false},
		{"sbatch: error: invalid partition", false},
	}
	for _, tt := range tests {
		if got := isJobID(tt.in); got != tt.want {
			t.Errorf("isJobID(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
