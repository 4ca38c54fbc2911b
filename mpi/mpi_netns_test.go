//go:build mpi && linux

package mpi_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The multi-node tests run each rank on its own "node": a network namespace
// joined to the others by a veth pair and a bridge, so that ranks talk over
// TCP exactly as on a cluster, and a node's link can be cut.
const (
	nsPrefix   = "xmcn"   // namespaces xmcn1, xmcn2, ...
	nsBridge   = "xmcbr0" // in the root namespace, 10.77.0.254
	nsSubnet   = "10.77.0.0/24"
	nsMaxNodes = 4
)

// nodeLink is the name of node i's end of its veth pair (inside the node).
func nodeLink(i int) string { return fmt.Sprintf("xmcv%dn", i) }

// cluster is a set of namespace nodes and the files mpirun needs for them.
type cluster struct {
	nodes    []string
	dir      string
	hostfile string
	agent    string
}

// newCluster creates n namespace nodes, removed when the test ends. It skips
// the test where namespaces cannot be created.
func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("multi-node tests create network namespaces and need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("multi-node tests need the ip command (iproute2)")
	}
	removeCluster(t) // leftovers of an earlier run that crashed
	t.Cleanup(func() { removeCluster(t) })
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := ip("link", "add", nsBridge, "type", "bridge"); err != nil {
		t.Skipf("cannot create network devices here: %v", err)
	}
	if err := ip("netns", "add", nsPrefix+"1"); err != nil {
		t.Skipf("cannot create network namespaces here: %v", err)
	}
	steps := [][]string{
		{"addr", "add", "10.77.0.254/24", "dev", nsBridge},
		{"link", "set", nsBridge, "up"},
	}
	c := &cluster{dir: t.TempDir()}
	for i := 1; i <= n; i++ {
		node, host := fmt.Sprintf("%s%d", nsPrefix, i), fmt.Sprintf("xmcv%dh", i)
		c.nodes = append(c.nodes, node)
		if i > 1 {
			steps = append(steps, []string{"netns", "add", node})
		}
		steps = append(steps,
			[]string{"link", "add", host, "type", "veth", "peer", "name", nodeLink(i), "netns", node},
			[]string{"link", "set", host, "master", nsBridge, "up"},
			[]string{"-n", node, "addr", "add", fmt.Sprintf("10.77.0.%d/24", i), "dev", nodeLink(i)},
			[]string{"-n", node, "link", "set", nodeLink(i), "up"},
			[]string{"-n", node, "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			t.Fatal(err)
		}
	}

	var hosts strings.Builder
	for _, node := range c.nodes {
		fmt.Fprintf(&hosts, "%s slots=1\n", node)
	}
	c.hostfile = filepath.Join(c.dir, "hostfile")
	// mpirun's remote shell: run the command inside the node's namespace.
	// The nodes share one file system and host name, so each gets a TMPDIR
	// of its own for OpenMPI's session directories.
	agent := fmt.Sprintf("#!/bin/sh\nnode=$1\nshift\nmkdir -p %[1]s/tmp-$node\n"+
		"exec ip netns exec \"$node\" env TMPDIR=%[1]s/tmp-$node /bin/sh -c \"$*\"\n", c.dir)
	c.agent = filepath.Join(c.dir, "agent.sh")
	if err := os.WriteFile(c.hostfile, []byte(hosts.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.agent, []byte(agent), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(c.dir, "tmp-mpirun"), 0o755); err != nil {
		t.Fatal(err)
	}
	return c
}

// removeCluster kills what runs in the test's namespaces and deletes them
// with their links.
func removeCluster(t *testing.T) {
	for i := 1; i <= nsMaxNodes; i++ {
		node := fmt.Sprintf("%s%d", nsPrefix, i)
		if out, err := exec.Command("ip", "netns", "pids", node).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				var pid int
				if _, err := fmt.Sscan(f, &pid); err == nil && pid > 1 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		exec.Command("ip", "netns", "del", node).Run()
		exec.Command("ip", "link", "del", fmt.Sprintf("xmcv%dh", i)).Run()
	}
	exec.Command("ip", "link", "del", nsBridge).Run()
}

// mpirun starts bin with args on one rank per node. OpenMPI's out-of-band
// channel uses short TCP keepalives, so that mpirun notices a lost node in
// about 3 s (see the package documentation).
func (c *cluster) mpirun(t *testing.T, limit time.Duration, bin string, args ...string) *job {
	mpiArgs := []string{
		"--hostfile", c.hostfile, "-np", fmt.Sprint(len(c.nodes)),
		"--mca", "plm_rsh_agent", c.agent,
		"--mca", "btl", "tcp,self",
		"--mca", "btl_tcp_if_include", nsSubnet,
		"--mca", "oob_tcp_if_include", nsSubnet,
		"--mca", "oob_tcp_keepalive_time", "1",
		"--mca", "oob_tcp_keepalive_intvl", "1",
		"--mca", "oob_tcp_keepalive_probes", "2",
		bin,
	}
	env := []string{"TMPDIR=" + filepath.Join(c.dir, "tmp-mpirun")}
	return startMpirun(t, limit, env, append(mpiArgs, args...)...)
}

func TestMPIMultiNode(t *testing.T) {
	bin := buildMpicheck(t)
	c := newCluster(t, 3)

	t.Run("conformance", func(t *testing.T) {
		start := time.Now()
		code, out := c.mpirun(t, time.Minute, bin, "-mode", "conformance").wait(t)
		// Ranks on several nodes keep OpenMPI's own PML.
		if code != 0 || !strings.Contains(out, "conformance passed on 3 ranks (openmpi backend, pml openmpi default)") {
			t.Fatalf("exit code %d; output:\n%s", code, out)
		}
		t.Logf("3 nodes over TCP in %v", time.Since(start).Round(time.Millisecond))
	})

	t.Run("link cut", func(t *testing.T) {
		const watchdog = 6 * time.Second
		j := c.mpirun(t, time.Minute, bin, "-mode", "loop", "-duration", "40s", "-watchdog", watchdog.String())
		// Cut the link once the collectives are running.
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(j.out.String(), "loop: iteration") {
			if time.Now().After(deadline) {
				j.stop()
				t.Fatalf("the loop did not start; output:\n%s", j.out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if out, err := exec.Command("ip", "-n", c.nodes[1], "link", "set", nodeLink(2), "down").CombinedOutput(); err != nil {
			j.stop()
			t.Fatalf("cut %s's link: %v: %s", c.nodes[1], err, out)
		}
		cut := time.Now()
		code, out := j.wait(t)
		took := time.Since(cut)
		t.Logf("mpirun ended with code %d %v after the cut", code, took.Round(time.Millisecond))
		if code == 0 {
			t.Fatalf("mpirun exited with 0 after a node was cut off; output:\n%s", out)
		}
		if limit := watchdog + 4*time.Second; took > limit {
			t.Errorf("mpirun took %v to end after the cut, want at most %v", took, limit)
		}
		lost := strings.Contains(out, "lost communication with a remote daemon") && strings.Contains(out, c.nodes[1])
		watched := strings.Contains(out, "aborts the job: watchdog:")
		if !lost && !watched {
			t.Errorf("output names neither the lost node nor a watchdog abort:\n%s", out)
		}
	})
}
