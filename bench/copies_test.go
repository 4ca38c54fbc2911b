package bench

import (
	"context"
	"strings"
	"testing"
)

func TestWriteCopies(t *testing.T) {
	tests := []struct {
		name   string
		points []CopiesPoint
		want   []string // the rows after the header, their columns one space apart
		err    bool
	}{
		{"alone and two", []CopiesPoint{
			{Workers: 1, TrainS: [][]float64{{2}, {2.2}, {1.8}}},
			{Workers: 2, TrainS: [][]float64{{2.2, 2.2}, {2.4, 2.0}, {2.6, 2.6}}},
		}, []string{"1 2.000 1.00 1.00×", "2 2.200 1.10 1.82×"}, false},
		{"a count skipped", []CopiesPoint{
			{Workers: 1, TrainS: [][]float64{{4}}},
			{Workers: 64, Skipped: "64 copies would take about 64 GiB"},
		}, []string{"1 4.000 1.00 1.00×", "64 skipped: 64 copies would take about 64 GiB"}, false},
		{"no copy alone", []CopiesPoint{{Workers: 2, TrainS: [][]float64{{1, 1}}}}, nil, true},
		{"nothing", nil, nil, true},
	}
	for _, tt := range tests {
		var b strings.Builder
		err := WriteCopies(&b, tt.points)
		if (err != nil) != tt.err {
			t.Errorf("%s: error %v, want one: %v", tt.name, err, tt.err)
			continue
		}
		if tt.err {
			continue
		}
		lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
		if len(lines) != 1+len(tt.want) {
			t.Fatalf("%s: %d lines, want %d:\n%s", tt.name, len(lines), 1+len(tt.want), b.String())
		}
		for i, w := range tt.want {
			if got := strings.Join(strings.Fields(lines[i+1]), " "); !strings.Contains(got, w) {
				t.Errorf("%s: row %d %q, want %q", tt.name, i+1, got, w)
			}
		}
	}
}

func TestRunCopiesRefuses(t *testing.T) {
	tests := []struct {
		name string
		c    CopiesConfig
		want string
	}{
		{"no repeat", CopiesConfig{Workers: []int{2}}, "repeats"},
		{"a count of 0", CopiesConfig{Workers: []int{0}, Repeats: 1}, "at least 1"},
		{"bench's own flag", CopiesConfig{Workers: []int{2}, Repeats: 1, TrainArgs: []string{"--threads", "4"}}, "--threads"},
	}
	for _, tt := range tests {
		tt.c.Dir = t.TempDir()
		if _, err := RunCopies(context.Background(), tt.c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one naming %q", tt.name, err, tt.want)
		}
	}
}
