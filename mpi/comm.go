// Package mpi is xmc's communicator: the one interface through which every
// distributed part of xmc (forest and linear trainers, prediction, benchmarks)
// talks to the other ranks of a job.
//
// Two backends implement it. The MPI backend (build tag "mpi", see Init)
// wraps OpenMPI through github.com/sbromberger/gompi and is launched by
// mpirun or srun --mpi=pmix, one rank per node; LaunchedByMPI tells whether
// this process was. The in-process backend (Launch) runs N ranks as
// goroutines of one process with the same semantics, for laptops and tests;
// package mpi/mpitest holds the conformance suite both backends pass. Both
// are wrapped by Counted, which accounts every message and byte and runs the
// no-progress watchdog, so figures are comparable across backends.
//
// # Threads
//
// The MPI backend initialises MPI with MPI_THREAD_MULTIPLE and refuses to
// run with less: Go moves goroutines between OS threads, and several
// goroutines of a rank (a progress receiver, the watchdog, trainers) call
// MPI, sometimes at once. Recv matches messages with MPI_Improbe and
// MPI_Mrecv, so concurrent receivers never take each other's message.
//
// # Failures
//
// The first rank to fail should call Abort, which ends every rank of the
// job; Counted's watchdog does the same for a rank blocked too long in an
// operation. A node that becomes unreachable needs one more setting under
// mpirun: OpenMPI 4's mpirun ends such a job only once it notices the lost
// node itself, through TCP keepalives on its out-of-band channel, and it
// hangs if a rank's abort (a watchdog's included) reached it first. Run
// mpirun with keepalives that detect a lost node well within --comm-timeout,
// for example
//
//	mpirun --mca oob_tcp_keepalive_time 10 --mca oob_tcp_keepalive_intvl 5 \
//	       --mca oob_tcp_keepalive_probes 3 ...
//
// which notices a lost node after about 25 s of silence. Under srun, Slurm
// detects failed nodes itself.
//
// # Limits
//
// MPI counts are C ints. Bcast, Reduce and Allreduce split larger buffers
// into several calls; a single Send, one rank's Gather contribution, and
// the total that Gatherv collects on the root or Allgatherv on each rank,
// and the totals that a rank sends and receives in an Alltoallv, must each
// stay below 2 GiB on the MPI backend.
package mpi

import "errors"

// Op is a reduction operator.
type Op int

// Reduction operators supported by Reduce and Allreduce.
const (
	Sum Op = iota
	Min
	Max
)

// String returns the operator name as used in reports.
func (o Op) String() string {
	switch o {
	case Sum:
		return "sum"
	case Min:
		return "min"
	case Max:
		return "max"
	}
	return "op?"
}

// AnySource makes Recv accept a message from any rank.
const AnySource = -1

// ErrAborted is returned by operations of a rank whose job was aborted,
// because another rank failed or the watchdog fired.
var ErrAborted = errors.New("mpi: job aborted")

// Comm is a communicator over the ranks of one job. Collective operations must
// be called by every rank in the same order. All methods are safe for
// concurrent use by several goroutines of a rank, but collectives must not be
// issued concurrently with each other on the same rank.
//
// Received buffers (from Bcast on other ranks than the root, Gather,
// Gatherv, Allgatherv, Alltoallv and Recv) are new memory, never nil, never shared with the sender
// or another receiver. Arguments are checked before any communication, so
// that ranks passing the same invalid argument all get the same error.
type Comm interface {
	// Rank is this process's rank in [0, Size).
	Rank() int
	// Size is the number of ranks in the job.
	Size() int
	// Barrier blocks until every rank has entered it.
	Barrier() error
	// Bcast returns root's buf on every rank (root gets buf itself); buf is
	// ignored on other ranks.
	Bcast(buf []byte, root int) ([]byte, error)
	// ReduceFloat64 combines data element-wise over ranks into data on root.
	// data must have the same length on every rank; other ranks' data is left
	// unchanged.
	ReduceFloat64(data []float64, op Op, root int) error
	// ReduceInt64 is ReduceFloat64 for int64.
	ReduceInt64(data []int64, op Op, root int) error
	// AllreduceFloat64 combines data element-wise over ranks, in place on all.
	AllreduceFloat64(data []float64, op Op) error
	// AllreduceInt64 is AllreduceFloat64 for int64.
	AllreduceInt64(data []int64, op Op) error
	// Gather collects equal-length buffers on root, indexed by rank; other
	// ranks get nil. Lengths that differ are an error in-process and
	// undefined under MPI: use Gatherv.
	Gather(buf []byte, root int) ([][]byte, error)
	// Gatherv is Gather for buffers whose lengths differ between ranks.
	// Root receives the buffers one after another in into when its
	// capacity holds them all, and in a new buffer otherwise (into may be
	// nil): a caller gathering in rounds passes the same into every round,
	// so that its rounds leave no garbage behind, and must be done with one
	// round's buffers before the next.
	Gatherv(buf []byte, root int, into []byte) ([][]byte, error)
	// Allgatherv gives every rank the buffers of all ranks, whose lengths
	// may differ, indexed by rank: one collective where a Gatherv and a
	// Bcast take two or more, which is what a trainer of rounds pays every
	// round. Every rank receives the buffers one after another in into
	// when its capacity holds them all, and in a new buffer otherwise, as
	// Gatherv's root does.
	Allgatherv(buf []byte, into []byte) ([][]byte, error)
	// Alltoallv sends each rank q its own part of buf: the counts[q] bytes
	// that follow the parts for the ranks before q (counts has one entry
	// per rank, and they sum to len(buf)). It returns, indexed by rank, the
	// part each rank sent this one. Where each rank needs only a share of
	// every rank's message, each receives about 1/P of what an Allgatherv
	// of the messages brings it. Every rank receives the parts one after
	// another in into when its capacity holds them all, and in a new
	// buffer otherwise, as Allgatherv does.
	Alltoallv(buf []byte, counts []int, into []byte) ([][]byte, error)
	// Send delivers buf to rank dest with tag (tag >= 0). buf may be reused
	// once Send returns. Under MPI, Send may block until the matching Recv
	// starts (large messages); in-process it never blocks.
	Send(buf []byte, dest, tag int) error
	// Recv receives the next message with tag from src (or AnySource) and
	// returns it with its source rank. Messages from one rank with one tag
	// arrive in the order they were sent.
	Recv(src, tag int) (buf []byte, from int, err error)
	// Abort ends the whole job with a non-zero status after printing msg; on
	// the in-process backend it makes every blocked or later operation of
	// every rank return ErrAborted.
	Abort(code int, msg string)
}
