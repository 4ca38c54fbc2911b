package numa

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// fakeNode is one node of a fake sysfs tree; meminfo "" writes no meminfo
// file.
type fakeNode struct {
	cpulist string
	meminfo string
}

// nodeMeminfo is the meminfo file of sysfs node id, abridged.
func nodeMeminfo(id int, totalKB, freeKB uint64) string {
	return fmt.Sprintf("Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB\nNode %d MemUsed:        %d kB\n",
		id, totalKB, id, freeKB, id, totalKB-freeKB)
}

// writeTree builds root/sys/devices/system/node with the given nodes and the
// other entries found there on a real machine.
func writeTree(t *testing.T, nodes map[int]fakeNode) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "sys", "devices", "system", "node")
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"online", "possible", "has_cpu", "has_memory", "uevent"} {
		write(filepath.Join(dir, name), "0\n")
	}
	if err := os.MkdirAll(filepath.Join(dir, "power"), 0o755); err != nil {
		t.Fatal(err)
	}
	for id, n := range nodes {
		node := filepath.Join(dir, fmt.Sprintf("node%d", id))
		write(filepath.Join(node, "cpulist"), n.cpulist)
		if n.meminfo != "" {
			write(filepath.Join(node, "meminfo"), n.meminfo)
		}
	}
	return root
}

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

const kB = 1024

func TestDetectFromFakeTree(t *testing.T) {
	tests := []struct {
		name    string
		nodes   map[int]fakeNode
		allowed []int
		want    []Domain
	}{
		{
			name: "two nodes",
			nodes: map[int]fakeNode{
				0: {"0-3\n", nodeMeminfo(0, 1000, 600)},
				1: {"4-7\n", nodeMeminfo(1, 2000, 1500)},
			},
			allowed: seq(0, 7),
			want: []Domain{
				{ID: 0, CPUs: seq(0, 3), MemTotal: 1000 * kB, MemFree: 600 * kB},
				{ID: 1, CPUs: seq(4, 7), MemTotal: 2000 * kB, MemFree: 1500 * kB},
			},
		},
		{
			name: "four nodes, interleaved hyperthreads, ordered by number",
			nodes: map[int]fakeNode{
				10: {"6-7,14-15\n", nodeMeminfo(10, 40, 4)},
				2:  {"4-5,12-13\n", nodeMeminfo(2, 30, 3)},
				1:  {"2-3,10-11\n", nodeMeminfo(1, 20, 2)},
				0:  {"0-1,8-9\n", nodeMeminfo(0, 10, 1)},
			},
			allowed: seq(0, 15),
			want: []Domain{
				{ID: 0, CPUs: []int{0, 1, 8, 9}, MemTotal: 10 * kB, MemFree: 1 * kB},
				{ID: 1, CPUs: []int{2, 3, 10, 11}, MemTotal: 20 * kB, MemFree: 2 * kB},
				{ID: 2, CPUs: []int{4, 5, 12, 13}, MemTotal: 30 * kB, MemFree: 3 * kB},
				{ID: 10, CPUs: []int{6, 7, 14, 15}, MemTotal: 40 * kB, MemFree: 4 * kB},
			},
		},
		{
			name: "memory-only node dropped",
			nodes: map[int]fakeNode{
				0: {"0-1\n", nodeMeminfo(0, 100, 50)},
				1: {"\n", nodeMeminfo(1, 900, 900)},
			},
			allowed: seq(0, 1),
			want:    []Domain{{ID: 0, CPUs: seq(0, 1), MemTotal: 100 * kB, MemFree: 50 * kB}},
		},
		{
			name: "affinity restricts CPUs",
			nodes: map[int]fakeNode{
				0: {"0-3\n", nodeMeminfo(0, 100, 50)},
				1: {"4-7\n", nodeMeminfo(1, 100, 60)},
			},
			allowed: []int{2, 3, 4},
			want: []Domain{
				{ID: 0, CPUs: []int{2, 3}, MemTotal: 100 * kB, MemFree: 50 * kB},
				{ID: 1, CPUs: []int{4}, MemTotal: 100 * kB, MemFree: 60 * kB},
			},
		},
		{
			name: "affinity empties a node, which is dropped without reading its meminfo",
			nodes: map[int]fakeNode{
				0: {"0-3\n", ""},
				1: {"4-7\n", nodeMeminfo(1, 100, 60)},
			},
			allowed: []int{5, 7},
			want:    []Domain{{ID: 1, CPUs: []int{5, 7}, MemTotal: 100 * kB, MemFree: 60 * kB}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := detectFrom(writeTree(t, tt.nodes), tt.allowed)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Domains, tt.want) {
				t.Errorf("got %+v\nwant %+v", got.Domains, tt.want)
			}
		})
	}
}

func TestDetectFromErrors(t *testing.T) {
	tests := []struct {
		name    string
		nodes   map[int]fakeNode
		allowed []int
		wantMsg string
	}{
		{
			name:    "malformed cpulist",
			nodes:   map[int]fakeNode{0: {"0-x\n", nodeMeminfo(0, 1, 1)}},
			allowed: seq(0, 1),
			wantMsg: "node 0",
		},
		{
			name:    "missing meminfo",
			nodes:   map[int]fakeNode{0: {"0-1\n", ""}},
			allowed: seq(0, 1),
			wantMsg: "meminfo",
		},
		{
			name:    "malformed meminfo",
			nodes:   map[int]fakeNode{0: {"0-1\n", "Node 0 MemTotal: 12x kB\nNode 0 MemFree: 1 kB\n"}},
			allowed: seq(0, 1),
			wantMsg: "line 1",
		},
		{
			name:    "meminfo without MemFree",
			nodes:   map[int]fakeNode{0: {"0-1\n", "Node 0 MemTotal: 12 kB\n"}},
			allowed: seq(0, 1),
			wantMsg: "MemFree",
		},
		{
			name:    "affinity outside every node",
			nodes:   map[int]fakeNode{0: {"0-1\n", nodeMeminfo(0, 1, 1)}},
			allowed: []int{4},
			wantMsg: "affinity mask 4",
		},
		{
			name:    "empty affinity",
			nodes:   map[int]fakeNode{0: {"0-1\n", nodeMeminfo(0, 1, 1)}},
			wantMsg: "empty CPU affinity",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := detectFrom(writeTree(t, tt.nodes), tt.allowed)
			if err == nil {
				t.Fatalf("got %+v, want error", got)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not mention %q", err, tt.wantMsg)
			}
		})
	}
}

func TestDetectFromWithoutNodeDir(t *testing.T) {
	root := t.TempDir()
	got, err := detectFrom(root, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []Domain{{ID: 0, CPUs: []int{0, 1, 2}}}
	if !reflect.DeepEqual(got.Domains, want) {
		t.Errorf("without /proc/meminfo: got %+v, want %+v", got.Domains, want)
	}

	if err := os.Mkdir(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	meminfo := "MemTotal:       24684084 kB\nMemFree:        23580160 kB\nMemAvailable:   23800000 kB\n"
	if err := os.WriteFile(filepath.Join(root, "proc", "meminfo"), []byte(meminfo), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = detectFrom(root, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	want = []Domain{{ID: 0, CPUs: []int{0, 1, 2}, MemTotal: 24684084 * kB, MemFree: 23580160 * kB}}
	if !reflect.DeepEqual(got.Domains, want) {
		t.Errorf("with /proc/meminfo: got %+v, want %+v", got.Domains, want)
	}
}

// TestDetectFromAffinity checks that DetectFrom restricts a fake tree to the
// real affinity mask: node 0 holds every CPU the test may run on, node 1
// only CPUs beyond it.
func TestDetectFromAffinity(t *testing.T) {
	allowed, err := affinity()
	if err != nil {
		t.Fatal(err)
	}
	last := slices.Max(allowed)
	root := writeTree(t, map[int]fakeNode{
		0: {"0-" + fmt.Sprint(last) + "\n", nodeMeminfo(0, 100, 50)},
		1: {fmt.Sprintf("%d-%d\n", last+1, last+4), nodeMeminfo(1, 100, 50)},
	})
	got, err := DetectFrom(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []Domain{{ID: 0, CPUs: allowed, MemTotal: 100 * kB, MemFree: 50 * kB}}
	if !reflect.DeepEqual(got.Domains, want) {
		t.Errorf("got %+v, want %+v", got.Domains, want)
	}
}

func TestDetect(t *testing.T) {
	topo, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", topo)
	// Go sizes runtime.NumCPU from the same affinity mask at startup.
	if n := len(topo.CPUs()); n != runtime.NumCPU() {
		t.Errorf("Detect found %d CPUs, runtime.NumCPU() = %d", n, runtime.NumCPU())
	}
	for i, d := range topo.Domains {
		if len(d.CPUs) == 0 {
			t.Errorf("domain %d has no CPUs", i)
		}
		if runtime.GOOS == "linux" && (d.MemTotal == 0 || d.MemFree > d.MemTotal) {
			t.Errorf("domain %d: MemFree %d, MemTotal %d", i, d.MemFree, d.MemTotal)
		}
		if i > 0 && d.ID <= topo.Domains[i-1].ID {
			t.Errorf("domains not ordered by ID: %d after %d", d.ID, topo.Domains[i-1].ID)
		}
	}
	if nodes, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*"); len(nodes) > 0 && len(topo.Domains) > len(nodes) {
		t.Errorf("%d domains from %d nodes", len(topo.Domains), len(nodes))
	}
}

func TestSimulate(t *testing.T) {
	twoNodes := Topology{Domains: []Domain{
		{ID: 0, CPUs: []int{0, 1, 2, 8}, MemTotal: 1000, MemFree: 501},
		{ID: 1, CPUs: []int{3, 4, 5}, MemTotal: 1001, MemFree: 500},
	}}
	tests := []struct {
		name string
		t    Topology
		k    int
		want [][]int
	}{
		{name: "one domain", t: twoNodes, k: 1, want: [][]int{{0, 1, 2, 3, 4, 5, 8}}},
		{name: "balanced", t: twoNodes, k: 3, want: [][]int{{0, 1, 2}, {3, 4}, {5, 8}}},
		{name: "one CPU each", t: twoNodes, k: 7, want: [][]int{{0}, {1}, {2}, {3}, {4}, {5}, {8}}},
		{name: "two CPUs", t: Topology{Domains: []Domain{{CPUs: []int{0, 1}, MemTotal: 10, MemFree: 5}}}, k: 2,
			want: [][]int{{0}, {1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, err := tt.t.Simulate(tt.k)
			if err != nil {
				t.Fatal(err)
			}
			var cpus [][]int
			var total, free uint64
			for i, d := range sim.Domains {
				if d.ID != i {
					t.Errorf("domain %d has ID %d", i, d.ID)
				}
				cpus = append(cpus, d.CPUs)
				total += d.MemTotal
				free += d.MemFree
				if d0 := sim.Domains[0]; d0.MemTotal-d.MemTotal > 1 || d0.MemFree-d.MemFree > 1 {
					t.Errorf("uneven memory split: %+v", sim.Domains)
				}
			}
			if !reflect.DeepEqual(cpus, tt.want) {
				t.Errorf("CPUs %v, want %v", cpus, tt.want)
			}
			var wantTotal, wantFree uint64
			for _, d := range tt.t.Domains {
				wantTotal += d.MemTotal
				wantFree += d.MemFree
			}
			if total != wantTotal || free != wantFree {
				t.Errorf("memory %d/%d, want %d/%d", free, total, wantFree, wantTotal)
			}
		})
	}
	for _, k := range []int{-1, 0, 8} {
		if sim, err := twoNodes.Simulate(k); err == nil {
			t.Errorf("Simulate(%d) on 7 CPUs = %+v, want error", k, sim)
		}
	}
}

func TestTopologyString(t *testing.T) {
	topo := Topology{Domains: []Domain{
		{ID: 0, CPUs: []int{0, 1, 2, 3, 8}, MemTotal: 128 << 30, MemFree: 3 << 29},
		{ID: 3, CPUs: []int{4}},
	}}
	want := "2 NUMA domains, 6 CPUs\n" +
		"  domain 0: node 0, CPUs 0-3,8 (5), memory 1.5 GiB free of 128 GiB\n" +
		"  domain 1: node 3, CPUs 4 (1), memory unknown"
	if got := topo.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
