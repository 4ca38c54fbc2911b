package slurm

import (
	"slices"
	"strings"
	"testing"
)

func TestArrayTasks(t *testing.T) {
	for _, c := range []struct {
		spec string
		want []int
	}{
		{"3", []int{3}},
		{"1-5", []int{1, 2, 3, 4, 5}},
		{"0,4,8", []int{0, 4, 8}},
		{"0-15:4", []int{0, 4, 8, 12}},
		{"1-4%2", []int{1, 2, 3, 4}},
		{"5,1-3,3", []int{1, 2, 3, 5}},
		{"5-1", nil},
		{"1-x", nil},
		{"0-8:0", nil},
		{"", nil},
	} {
		got, err := ArrayTasks(c.spec)
		if (err != nil) != (c.want == nil) || !slices.Equal(got, c.want) {
			t.Errorf("ArrayTasks(%q) = %v, %v; want %v", c.spec, got, err, c.want)
		}
	}
}

func TestMergeJob(t *testing.T) {
	array := Job{Name: "ranges", Nodes: 2, CPUsPerTask: 8, Array: "0-2", Partition: "p", Time: "60", Exe: "/x/xmc",
		Args: []string{"train", "--algo", "dismec", "--label-range", "{task}/3", "--model-out=out/r{task}.model"}}
	m, err := MergeJob(array, "out/all.model")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"merge", "--out", "out/all.model", "out/r0.model", "out/r1.model", "out/r2.model"}
	if !slices.Equal(m.Args, want) || m.Nodes != 1 || m.CPUsPerTask != 1 || m.Partition != "p" || m.Name != "ranges-merge" || m.Array != "" {
		t.Errorf("merge job %+v, want args %v on one CPU", m, want)
	}
	if _, err := m.Script(); err != nil {
		t.Errorf("merge job script: %v", err)
	}
	for _, bad := range []Job{
		{Array: "", Args: array.Args},
		{Array: "0-2", Args: []string{"train", "--label-range", "{task}/3", "--model-out", "r.model"}},
		{Array: "0-2", Args: []string{"train", "--model-out", "r{task}.model"}},
		{Array: "0-2", Args: []string{"predict", "--model", "r{task}.model"}},
		{Array: "1-3", Args: array.Args},
		{Array: "0-3", Args: array.Args},
	} {
		if _, err := MergeJob(bad, "all.model"); err == nil || !strings.Contains(err.Error(), "merge") && !strings.Contains(err.Error(), "tasks 0-2") {
			t.Errorf("MergeJob(%v): %v", bad.Args, err)
		}
	}
}
