// Package numa gives xmc the NUMA layout of a node, worker pools pinned to
// NUMA domains, and per-domain replicas of read-only data.
//
// Each MPI rank runs one [Pool]. Every worker of the pool is a goroutine
// locked to its own OS thread, and that thread is bound (sched_setaffinity)
// to the CPUs of one NUMA domain. Read-only training data is replicated once
// per domain with [NewReplicas]: each copy is built by a worker of its
// domain, so that under Linux's first-touch policy its pages land in that
// domain's memory and the domain's workers read it without crossing the
// socket interconnect.
//
// First touch is best effort in Go: pages the Go heap already holds keep the
// node they were first touched on, so only fresh, large allocations (the
// bulk of a training set) are reliably placed. Binding memory explicitly
// (mbind) would need allocation outside the Go heap and is not attempted.
//
// [Detect] reads the topology from sysfs, restricted to the CPUs this process
// may run on (Slurm and cgroups often give a rank fewer CPUs than the node
// has). [Topology.Simulate] splits CPUs into artificial domains so that
// single-node machines and tests exercise the same code paths as large
// multi-socket nodes.
//
// When the OS refuses pinning (containers, restrictive cgroups), pools keep
// working unpinned and log a single warning; this is a performance problem,
// never a correctness one.
//
// A pool runs work in three ways: [Pool.Run] calls a function on every
// worker, [Pool.For] deals the chunks of a loop to them, and, for many
// short loops in a row, [Pool.Together] holds the workers in a [Team] that
// hands each loop out through memory, its members spinning between loops
// rather than parking their threads. What the pool cannot see of the job
// is given at its start ([Options]): how many pools share its CPUs, and
// whether a rank of one worker runs its loops itself rather than hand them
// to its worker's thread and back each time.
//
// [LargeBytes] allocates large buffers advised to be backed by transparent
// huge pages, which cuts the cost of first touching them.
//
// Thread pinning uses Linux system calls; on other systems Detect reports a
// single domain and every worker runs unpinned.
package numa
