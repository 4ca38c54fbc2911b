package numa

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
)

// Domain is one NUMA domain as this process sees it: the CPUs of one NUMA
// node that the process may run on, and the memory of that node.
type Domain struct {
	// ID is the kernel's node number (N in /sys/devices/system/node/nodeN),
	// or the domain's index for a simulated topology.
	ID int
	// CPUs lists the domain's CPUs, ascending.
	CPUs []int
	// MemTotal and MemFree are the domain's memory in bytes, 0 when unknown.
	MemTotal, MemFree uint64
}

// Topology is the set of NUMA domains a process can run on, ordered by
// domain ID. Pools and replicas refer to a domain by its index in Domains.
type Topology struct {
	Domains []Domain
}

// Detect returns the NUMA topology of this machine restricted to the CPU
// affinity mask of the calling thread, which on Linux every thread inherits
// from the process: NUMA nodes left without CPUs (memory-only nodes, or
// nodes outside a Slurm allocation) are dropped. Without
// /sys/devices/system/node (some containers, non-NUMA kernels) it returns a
// single domain holding the affinity CPUs and the memory of /proc/meminfo.
//
// Call Detect from an ordinary goroutine, not from a pinned pool worker,
// whose thread sees only its own domain.
func Detect() (Topology, error) {
	return DetectFrom("/")
}

// DetectFrom is Detect reading the file system tree under root instead of
// "/": node information comes from root/sys/devices/system/node and the
// fallback's memory from root/proc/meminfo. It exists for tests and for
// inspecting a copy of another machine's sysfs. The affinity mask is still
// that of the calling thread.
func DetectFrom(root string) (Topology, error) {
	allowed, err := affinity()
	if err != nil {
		return Topology{}, fmt.Errorf("detect NUMA topology: %w", err)
	}
	return detectFrom(root, allowed)
}

// detectFrom is DetectFrom with the affinity mask given as the ascending
// list allowed.
func detectFrom(root string, allowed []int) (Topology, error) {
	if len(allowed) == 0 {
		return Topology{}, errors.New("detect NUMA topology: empty CPU affinity mask")
	}
	nodeDir := filepath.Join(root, "sys", "devices", "system", "node")
	entries, err := os.ReadDir(nodeDir)
	if errors.Is(err, fs.ErrNotExist) {
		return singleDomain(root, allowed)
	}
	if err != nil {
		return Topology{}, fmt.Errorf("detect NUMA topology: %w", err)
	}
	var t Topology
	for _, e := range entries {
		id, ok := nodeID(e.Name())
		if !ok {
			continue
		}
		dir := filepath.Join(nodeDir, e.Name())
		list, err := os.ReadFile(filepath.Join(dir, "cpulist"))
		if err != nil {
			return Topology{}, fmt.Errorf("detect NUMA topology: %w", err)
		}
		cpus, err := ParseCPUList(string(list))
		if err != nil {
			return Topology{}, fmt.Errorf("detect NUMA topology: node %d: %w", id, err)
		}
		cpus = intersect(cpus, allowed)
		if len(cpus) == 0 {
			continue
		}
		total, free, err := readMeminfo(filepath.Join(dir, "meminfo"))
		if err != nil {
			return Topology{}, fmt.Errorf("detect NUMA topology: %w", err)
		}
		t.Domains = append(t.Domains, Domain{ID: id, CPUs: cpus, MemTotal: total, MemFree: free})
	}
	if len(t.Domains) == 0 {
		return Topology{}, fmt.Errorf("detect NUMA topology: no node in %s holds a CPU of the affinity mask %s",
			nodeDir, FormatCPUList(allowed))
	}
	slices.SortFunc(t.Domains, func(a, b Domain) int { return a.ID - b.ID })
	return t, nil
}

// singleDomain is the topology of a machine without NUMA information: one
// domain with the allowed CPUs and the memory of root/proc/meminfo, or
// unknown memory where that file is missing (non-Linux systems).
func singleDomain(root string, allowed []int) (Topology, error) {
	d := Domain{ID: 0, CPUs: slices.Clone(allowed)}
	total, free, err := readMeminfo(filepath.Join(root, "proc", "meminfo"))
	switch {
	case err == nil:
		d.MemTotal, d.MemFree = total, free
	case !errors.Is(err, fs.ErrNotExist):
		return Topology{}, fmt.Errorf("detect NUMA topology: %w", err)
	}
	return Topology{Domains: []Domain{d}}, nil
}

// nodeID returns N for a sysfs entry named "nodeN", and false for the other
// entries of /sys/devices/system/node ("online", "has_cpu", ...).
func nodeID(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "node")
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.Atoi(digits)
	return id, err == nil
}

// intersect returns the elements common to the ascending lists a and b.
func intersect(a, b []int) []int {
	var out []int
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// readMeminfo returns MemTotal and MemFree in bytes from a meminfo file,
// either /proc/meminfo ("MemTotal:  4155596 kB") or a sysfs node's
// ("Node 0 MemTotal:  4155596 kB").
func readMeminfo(path string) (total, free uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var haveTotal, haveFree bool
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) > 2 && fields[0] == "Node" {
			fields = fields[2:]
		}
		if len(fields) < 2 || (fields[0] != "MemTotal:" && fields[0] != "MemFree:") {
			continue
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("read %s line %d: %w", path, line, err)
		}
		if len(fields) > 2 && fields[2] == "kB" {
			if v > math.MaxUint64/1024 {
				return 0, 0, fmt.Errorf("read %s line %d: %s kB overflows", path, line, fields[1])
			}
			v *= 1024
		}
		if fields[0] == "MemTotal:" {
			total, haveTotal = v, true
		} else {
			free, haveFree = v, true
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", path, err)
	}
	if !haveTotal || !haveFree {
		return 0, 0, fmt.Errorf("read %s: no MemTotal or MemFree line", path)
	}
	return total, free, nil
}

// CPUs returns the CPUs of all domains, ascending.
func (t Topology) CPUs() []int {
	var cpus []int
	for _, d := range t.Domains {
		cpus = append(cpus, d.CPUs...)
	}
	slices.Sort(cpus)
	return slices.Compact(cpus)
}

// Simulate returns a topology of k artificial domains that split the CPUs of
// t, ascending, into contiguous runs whose sizes differ by at most one (the
// first domains get the extra CPUs), and split the memory of t evenly. It
// lets a machine with one NUMA node run, and test, the multi-domain code.
// k must lie between 1 and the number of CPUs.
func (t Topology) Simulate(k int) (Topology, error) {
	cpus := t.CPUs()
	if k < 1 || k > len(cpus) {
		return Topology{}, fmt.Errorf("simulate %d NUMA domains on %d CPUs: need between 1 and %d domains",
			k, len(cpus), len(cpus))
	}
	var total, free uint64
	for _, d := range t.Domains {
		total += d.MemTotal
		free += d.MemFree
	}
	sim := Topology{Domains: make([]Domain, k)}
	start := 0
	for i := range k {
		n := len(cpus) / k
		if i < len(cpus)%k {
			n++
		}
		sim.Domains[i] = Domain{
			ID:       i,
			CPUs:     cpus[start : start+n : start+n],
			MemTotal: share(total, k, i),
			MemFree:  share(free, k, i),
		}
		start += n
	}
	return sim, nil
}

// share returns part i of x split into k parts that differ by at most one
// and sum to x.
func share(x uint64, k, i int) uint64 {
	s := x / uint64(k)
	if uint64(i) < x%uint64(k) {
		s++
	}
	return s
}

// String describes the topology for humans (xmc info), one line per domain:
//
//	2 NUMA domains, 64 CPUs
//	  domain 0: node 0, CPUs 0-31 (32), memory 120.3 GiB free of 125.7 GiB
//	  domain 1: node 1, CPUs 32-63 (32), memory 118.9 GiB free of 125.9 GiB
func (t Topology) String() string {
	var b strings.Builder
	noun := "domains"
	if len(t.Domains) == 1 {
		noun = "domain"
	}
	fmt.Fprintf(&b, "%d NUMA %s, %d CPUs", len(t.Domains), noun, len(t.CPUs()))
	for i, d := range t.Domains {
		fmt.Fprintf(&b, "\n  domain %d: node %d, CPUs %s (%d), ", i, d.ID, FormatCPUList(d.CPUs), len(d.CPUs))
		if d.MemTotal == 0 {
			b.WriteString("memory unknown")
		} else {
			fmt.Fprintf(&b, "memory %s free of %s", humanize.IBytes(d.MemFree), humanize.IBytes(d.MemTotal))
		}
	}
	return b.String()
}
