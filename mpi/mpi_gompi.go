//go:build mpi

package mpi

/*
#cgo pkg-config: ompi-c
#include <mpi.h>

// MPI handles such as MPI_COMM_WORLD are macros that Go cannot name, so the
// calls go through these wrappers. They also give empty Go buffers (nil) a
// valid address, which MPI requires even for zero counts.

static char xmc_empty;

static void *xmc_buf(void *p) { return p ? p : &xmc_empty; }

static int xmc_init(int *provided) {
	int flag;
	MPI_Initialized(&flag);
	if (flag) return -1;
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, provided);
}

static int xmc_finalize(void) {
	int flag;
	MPI_Initialized(&flag);
	if (!flag) return -2;
	MPI_Finalized(&flag);
	if (flag) return -1;
	return MPI_Finalize();
}

static int xmc_tag_ub(void) {
	int *ub, flag;
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
	return flag ? *ub : 32767; // 32767 is the least bound MPI allows
}

static int xmc_bcast(void *buf, int n, int root) {
	return MPI_Bcast(xmc_buf(buf), n, MPI_BYTE, root, MPI_COMM_WORLD);
}

static MPI_Datatype xmc_type(int isInt) { return isInt ? MPI_INT64_T : MPI_DOUBLE; }

static MPI_Op xmc_op(int op) {
	switch (op) {
	case 0: return MPI_SUM;
	case 1: return MPI_MIN;
	}
	return MPI_MAX;
}

static int xmc_reduce(void *data, int n, int isInt, int op, int root, int rank) {
	if (rank == root)
		return MPI_Reduce(MPI_IN_PLACE, data, n, xmc_type(isInt), xmc_op(op), root, MPI_COMM_WORLD);
	return MPI_Reduce(data, NULL, n, xmc_type(isInt), xmc_op(op), root, MPI_COMM_WORLD);
}

static int xmc_allreduce(void *data, int n, int isInt, int op) {
	return MPI_Allreduce(MPI_IN_PLACE, data, n, xmc_type(isInt), xmc_op(op), MPI_COMM_WORLD);
}

static int xmc_gather(void *send, int n, void *recv, int root) {
	return MPI_Gather(xmc_buf(send), n, MPI_BYTE, recv, n, MPI_BYTE, root, MPI_COMM_WORLD);
}

static int xmc_allgather_int64(long long n, long long *all) {
	return MPI_Allgather(&n, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
}

static int xmc_gatherv(void *send, int n, void *recv, int *counts, int *displs, int root) {
	return MPI_Gatherv(xmc_buf(send), n, MPI_BYTE, xmc_buf(recv), counts, displs, MPI_BYTE, root, MPI_COMM_WORLD);
}

static int xmc_allgatherv(void *send, int n, void *recv, int *counts, int *displs) {
	return MPI_Allgatherv(xmc_buf(send), n, MPI_BYTE, xmc_buf(recv), counts, displs, MPI_BYTE, MPI_COMM_WORLD);
}

static int xmc_allgather_bytes(void *send, int n, void *recv) {
	return MPI_Allgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, MPI_COMM_WORLD);
}

static int xmc_alltoall_bytes(void *send, int n, void *recv) {
	return MPI_Alltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, MPI_COMM_WORLD);
}

static int xmc_alltoallv(void *send, int *scounts, int *sdispls, void *recv, int *rcounts, int *rdispls) {
	return MPI_Alltoallv(xmc_buf(send), scounts, sdispls, MPI_BYTE, xmc_buf(recv), rcounts, rdispls, MPI_BYTE, MPI_COMM_WORLD);
}

static int xmc_send(void *buf, int n, int dest, int tag) {
	return MPI_Send(xmc_buf(buf), n, MPI_BYTE, dest, tag, MPI_COMM_WORLD);
}

static int xmc_improbe(int src, int tag, int *flag, MPI_Message *msg, int *count, int *from) {
	MPI_Status st;
	int rc = MPI_Improbe(src, tag, MPI_COMM_WORLD, flag, msg, &st);
	if (rc != MPI_SUCCESS || !*flag) return rc;
	*from = st.MPI_SOURCE;
	return MPI_Get_count(&st, MPI_BYTE, count);
}

static int xmc_mrecv(void *buf, int n, MPI_Message *msg) {
	return MPI_Mrecv(xmc_buf(buf), n, MPI_BYTE, msg, MPI_STATUS_IGNORE);
}

static void xmc_error_string(int code, char *s, int *n) {
	if (MPI_Error_string(code, s, n) != MPI_SUCCESS) *n = 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"time"
	"unsafe"

	gompi "github.com/sbromberger/gompi"

	"xmc/numa"
)

// Backend names the MPI implementation linked into this binary.
const Backend = "openmpi"

// maxChunk bounds the bytes of one MPI call of Bcast, Reduce and Allreduce,
// whose counts are C ints: larger buffers go in several calls.
const maxChunk = 1 << 30

// abortGrace is how long Abort waits for MPI_Abort to end this process
// before exiting by itself, for when MPI_Abort cannot reach mpirun.
const abortGrace = 10 * time.Second

// Init joins the MPI job this process was launched in (see LaunchedByMPI)
// and returns its communicator over MPI_COMM_WORLD.
//
// MPI is initialised with MPI_THREAD_MULTIPLE, and Init fails if the library
// provides less. Go moves goroutines between OS threads, and several
// goroutines of a rank (a progress receiver, the watchdog, trainers) call
// MPI, possibly at the same time: only MPI_THREAD_MULTIPLE allows that.
//
// For a job whose ranks all run on this node, Init selects OpenMPI's ob1
// point-to-point layer unless the user chose one (see OneNodePML).
//
// Call Finalize once the job's communication is over.
func Init() (Comm, error) {
	if pml, ok := OneNodePML(os.LookupEnv); ok {
		// OpenMPI reads its parameters from the environment in
		// MPI_Init; Go's Setenv reaches the C environment in cgo builds.
		if err := os.Setenv("OMPI_MCA_pml", pml); err != nil {
			return nil, fmt.Errorf("mpi: init: %w", err)
		}
	}
	var provided C.int
	switch rc := C.xmc_init(&provided); {
	case rc == -1:
		return nil, errors.New("mpi: init: MPI is already initialised")
	case rc != C.MPI_SUCCESS:
		return nil, fmt.Errorf("mpi: init: MPI_Init_thread: %s", errorString(rc))
	}
	if provided < C.MPI_THREAD_MULTIPLE {
		C.xmc_finalize()
		return nil, fmt.Errorf("mpi: init: the MPI library provides thread level %s, but xmc calls MPI "+
			"from several threads and needs MPI_THREAD_MULTIPLE: use an OpenMPI built with thread "+
			"support (ompi_info | grep 'MPI_THREAD_MULTIPLE: yes')", threadLevel(provided))
	}
	world := gompi.NewCommunicator(nil)
	maxTag := int(C.xmc_tag_ub())
	return &mpiComm{world: world, rank: world.Rank(), size: world.Size(), maxTag: maxTag}, nil
}

// Finalize ends MPI; it must be called once, after the last operation of
// the Comm returned by Init.
func Finalize() error {
	switch rc := C.xmc_finalize(); {
	case rc == -2:
		return errors.New("mpi: finalize: MPI was never initialised")
	case rc == -1:
		return errors.New("mpi: finalize: MPI is already finalised")
	case rc != C.MPI_SUCCESS:
		return fmt.Errorf("mpi: finalize: %s", errorString(rc))
	}
	return nil
}

func threadLevel(l C.int) string {
	switch l {
	case C.MPI_THREAD_SINGLE:
		return "MPI_THREAD_SINGLE"
	case C.MPI_THREAD_FUNNELED:
		return "MPI_THREAD_FUNNELED"
	case C.MPI_THREAD_SERIALIZED:
		return "MPI_THREAD_SERIALIZED"
	}
	return fmt.Sprint(int(l))
}

func errorString(rc C.int) string {
	var buf [C.MPI_MAX_ERROR_STRING]C.char
	var n C.int
	C.xmc_error_string(rc, &buf[0], &n)
	if n == 0 {
		return fmt.Sprintf("MPI error %d", int(rc))
	}
	return C.GoStringN(&buf[0], n)
}

// mpiErr turns an MPI return code into an error. With MPI's default error
// handler (MPI_ERRORS_ARE_FATAL) failing calls end the job before
// returning; this covers jobs that install MPI_ERRORS_RETURN.
func mpiErr(op opKind, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	return fmt.Errorf("mpi: %s: %s", op, errorString(rc))
}

// mpiComm is the Comm of MPI_COMM_WORLD. gompi gives rank, size, Barrier
// and Abort; the tag bound and the other operations call MPI through the
// wrappers above because gompi lacks them (gather, matched probes), cannot
// pass empty buffers (it indexes &buf[0]), needs separate send and receive
// buffers for reductions where MPI_IN_PLACE saves a copy, or is wrong
// (BcastBytes broadcasts len(buf) MPI_INTs, four times the buffer; MaxTag
// holds the address of the tag bound, not the bound).
type mpiComm struct {
	world  *gompi.Communicator
	rank   int
	size   int
	maxTag int

	// The slots of small Allgathervs and Alltoallvs (see slots.go): their
	// sizes, and the send and receive buffers they share, which only
	// collectives use, never two at once.
	gatherSlots, alltoallSlots slotSizer
	slotBuf                    [2][]byte
}

func (m *mpiComm) Rank() int { return m.rank }
func (m *mpiComm) Size() int { return m.size }

func (m *mpiComm) Barrier() error {
	m.world.Barrier()
	return nil
}

// ptr is the address of a slice's data for C, nil for an empty slice.
func ptr[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(s))
}

// Bcast sends the length first, since the other ranks do not know it.
func (m *mpiComm) Bcast(buf []byte, root int) ([]byte, error) {
	if err := checkRoot(opBcast, root, m.size); err != nil {
		return nil, err
	}
	n := int64(len(buf))
	if err := mpiErr(opBcast, C.xmc_bcast(unsafe.Pointer(&n), 8, C.int(root))); err != nil {
		return nil, err
	}
	out := buf
	if m.rank != root {
		out = make([]byte, n)
	}
	for off := 0; off < len(out); off += maxChunk {
		part := out[off:min(off+maxChunk, len(out))]
		if err := mpiErr(opBcast, C.xmc_bcast(ptr(part), C.int(len(part)), C.int(root))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m *mpiComm) ReduceFloat64(data []float64, op Op, root int) error {
	return mpiReduce(m, data, false, op, root)
}

func (m *mpiComm) ReduceInt64(data []int64, op Op, root int) error {
	return mpiReduce(m, data, true, op, root)
}

func (m *mpiComm) AllreduceFloat64(data []float64, op Op) error {
	return mpiAllreduce(data, false, op)
}

func (m *mpiComm) AllreduceInt64(data []int64, op Op) error {
	return mpiAllreduce(data, true, op)
}

// mpiReduce reduces in place on root (MPI_IN_PLACE), in chunks of maxChunk
// bytes. Every rank has the same length, so every rank makes the same calls,
// none for empty data.
func mpiReduce[T float64 | int64](m *mpiComm, data []T, isInt bool, op Op, root int) error {
	if err := checkOp(op); err != nil {
		return err
	}
	if err := checkRoot(opReduce, root, m.size); err != nil {
		return err
	}
	for off := 0; off < len(data); off += maxChunk / 8 {
		part := data[off:min(off+maxChunk/8, len(data))]
		rc := C.xmc_reduce(ptr(part), C.int(len(part)), cBool(isInt), C.int(op), C.int(root), C.int(m.rank))
		if err := mpiErr(opReduce, rc); err != nil {
			return err
		}
	}
	return nil
}

func mpiAllreduce[T float64 | int64](data []T, isInt bool, op Op) error {
	if err := checkOp(op); err != nil {
		return err
	}
	for off := 0; off < len(data); off += maxChunk / 8 {
		part := data[off:min(off+maxChunk/8, len(data))]
		rc := C.xmc_allreduce(ptr(part), C.int(len(part)), cBool(isInt), C.int(op))
		if err := mpiErr(opAllreduce, rc); err != nil {
			return err
		}
	}
	return nil
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Gather calls MPI_Gather. Compared with a gather on Send and Recv
// (mpi/internal/mpicheck -mode bench), it was as fast or faster for 1 KB
// buffers and 10-40% slower for 8 MB ones on shared memory. It is kept
// because small gathers dominate at scale, where MPI's tree algorithms beat
// a linear gather, and because a correct gather on Send and Recv would need
// a tag space of its own and a tag per gather to keep back-to-back gathers
// apart. Every rank passes the same length, so every rank takes the same
// branch.
func (m *mpiComm) Gather(buf []byte, root int) ([][]byte, error) {
	if err := checkRoot(opGather, root, m.size); err != nil {
		return nil, err
	}
	n := len(buf)
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("mpi: gather: %d bytes per rank exceed MPI's limit of %d", n, math.MaxInt32)
	}
	var all []byte
	if m.rank == root {
		all = make([]byte, n*m.size)
	}
	if n > 0 {
		if err := mpiErr(opGather, C.xmc_gather(ptr(buf), C.int(n), ptr(all), C.int(root))); err != nil {
			return nil, err
		}
	}
	if m.rank != root {
		return nil, nil
	}
	return split(all, func(q int) int { return n }, m.size), nil
}

// Gatherv calls MPI_Allgather for the lengths, so that every rank can check
// the limits and skip an empty gather alike, then MPI_Gatherv (see Gather
// for the choice of MPI's collectives over Send and Recv).
func (m *mpiComm) Gatherv(buf []byte, root int, into []byte) ([][]byte, error) {
	if err := checkRoot(opGatherv, root, m.size); err != nil {
		return nil, err
	}
	lens, total, err := m.lengths(opGatherv, len(buf))
	if err != nil {
		return nil, err
	}
	var all []byte
	var counts, displs []C.int
	if m.rank == root {
		all, counts, displs = receiveInto(into, lens, total)
	}
	if total > 0 {
		rc := C.xmc_gatherv(ptr(buf), C.int(len(buf)), ptr(all), ptrC(counts), ptrC(displs), C.int(root))
		if err := mpiErr(opGatherv, rc); err != nil {
			return nil, err
		}
	}
	if m.rank != root {
		return nil, nil
	}
	return split(all, func(q int) int { return int(lens[q]) }, m.size), nil
}

// lengths gives every rank every rank's contribution n to a gather of
// variable lengths (MPI_Allgather), and their total, which must fit MPI's
// int counts.
func (m *mpiComm) lengths(op opKind, n int) (lens []int64, total int64, err error) {
	lens = make([]int64, m.size)
	rc := C.xmc_allgather_int64(C.longlong(n), (*C.longlong)(unsafe.Pointer(&lens[0])))
	if err := mpiErr(op, rc); err != nil {
		return nil, 0, err
	}
	for _, n := range lens {
		total += n
	}
	if total > math.MaxInt32 {
		return nil, 0, tooLarge(op, total)
	}
	return lens, total, nil
}

// tooLarge is the error of a gather whose total exceeds MPI's int counts.
func tooLarge(op opKind, total int64) error {
	return fmt.Errorf("mpi: %s: %d bytes in all exceed MPI's limit of %d: gather in parts", op, total, math.MaxInt32)
}

// Allgatherv calls MPI_Allgather for the lengths, with the buffers where
// every one fits its slot (see slots.go), then MPI_Allgatherv where one
// does not: one or two collectives where Gatherv and Bcast take four.
func (m *mpiComm) Allgatherv(buf []byte, into []byte) ([][]byte, error) {
	parts, lens, gathered, err := m.allgathervUpTo(buf, into, math.MaxInt32)
	if err == nil && !gathered {
		var total int64
		for _, n := range lens {
			total += n
		}
		err = tooLarge(opAllgatherv, total)
	}
	return parts, err
}

// allgathervUpTo is Allgatherv where the ranks' buffers total at most
// limit bytes (at most MaxMessage); otherwise it returns their lengths
// after the first collective (see boundedAllgatherer).
func (m *mpiComm) allgathervUpTo(buf, into []byte, limit int) ([][]byte, []int64, bool, error) {
	size := m.gatherSlots.size()
	if size*m.size > limit {
		size = slotHeader // no more than limit bytes in one collective
	}
	send, recv := slotBuffers(&m.slotBuf, size, size*m.size)
	putSlot(send, buf, len(buf))
	if err := mpiErr(opAllgatherv, C.xmc_allgather_bytes(ptr(send), C.int(size), ptr(recv))); err != nil {
		return nil, nil, false, err
	}
	lens, total, longest := readSlots(recv, size, m.size)
	m.gatherSlots.saw(longest)
	if total > int64(limit) {
		return nil, lens, false, nil
	}
	all, counts, displs := receiveInto(into, lens, total)
	if longest <= size-slotHeader {
		copySlots(all, recv, size, lens)
	} else {
		rc := C.xmc_allgatherv(ptr(buf), C.int(len(buf)), ptr(all), ptrC(counts), ptrC(displs))
		if err := mpiErr(opAllgatherv, rc); err != nil {
			return nil, nil, false, err
		}
	}
	return split(all, func(q int) int { return int(lens[q]) }, m.size), lens, true, nil
}

// Alltoallv calls MPI_Alltoall for the parts' lengths, with the parts
// where every one fits its slot (see slots.go), then MPI_Alltoallv where
// one does not.
func (m *mpiComm) Alltoallv(buf []byte, counts []int, into []byte) ([][]byte, error) {
	if err := checkCounts(counts, m.size, len(buf)); err != nil {
		return nil, err
	}
	parts, _, _, err := m.alltoallvUpTo(buf, counts, into, math.MaxInt)
	return parts, err
}

// alltoallvUpTo is Alltoallv where no rank's part for another is longer
// than limit/P bytes, P the ranks; otherwise it returns the longest part
// after the first collective, the same on every rank, having moved nothing
// (see boundedAlltoaller). counts must be valid (checkCounts).
func (m *mpiComm) alltoallvUpTo(buf []byte, counts []int, into []byte, limit int) ([][]byte, int, bool, error) {
	if len(buf) > math.MaxInt32 {
		return nil, 0, false, fmt.Errorf("mpi: %s: %d bytes to send exceed MPI's limit of %d", opAlltoallv, len(buf), math.MaxInt32)
	}
	longest := slices.Max(counts)
	// Each rank sends each other the length of its part and its longest
	// part, so that every rank knows the longest of all, and the parts
	// themselves where they fit their slots.
	size := m.alltoallSlots.size()
	if size*m.size > limit {
		size = slotHeader // no more than limit bytes in one collective
	}
	send, recv := slotBuffers(&m.slotBuf, size*m.size, size*m.size)
	off := 0
	for q, n := range counts {
		putSlot(send[q*size:(q+1)*size], buf[off:off+n], longest)
		off += n
	}
	if err := mpiErr(opAlltoallv, C.xmc_alltoall_bytes(ptr(send), C.int(size), ptr(recv))); err != nil {
		return nil, 0, false, err
	}
	lens, total, longest := readSlots(recv, size, m.size)
	m.alltoallSlots.saw(longest)
	if longest > limit/m.size {
		return nil, longest, false, nil
	}
	if total > math.MaxInt32 {
		return nil, 0, false, fmt.Errorf("mpi: %s: %d bytes to receive exceed MPI's limit of %d", opAlltoallv, total, math.MaxInt32)
	}
	all, rcounts, rdispls := receiveInto(into, lens, total)
	if longest <= size-slotHeader {
		copySlots(all, recv, size, lens)
	} else {
		scounts, sdispls := make([]C.int, m.size), make([]C.int, m.size)
		off := 0
		for q, n := range counts {
			scounts[q], sdispls[q] = C.int(n), C.int(off)
			off += n
		}
		rc := C.xmc_alltoallv(ptr(buf), ptrC(scounts), ptrC(sdispls), ptr(all), ptrC(rcounts), ptrC(rdispls))
		if err := mpiErr(opAlltoallv, rc); err != nil {
			return nil, 0, false, err
		}
	}
	return split(all, func(q int) int { return int(lens[q]) }, m.size), longest, true, nil
}

// receiveInto returns the buffer that a gather of the ranks' lens bytes,
// total in all, receives into (into where it holds them all, else new
// memory, never nil), with MPI's counts and displacements of the parts in
// it. Large gathers (encoded trees, tens of MiB) land in huge pages where
// the system has them: first touching the buffer is most of a gather's cost
// when page faults are dear.
func receiveInto(into []byte, lens []int64, total int64) (all []byte, counts, displs []C.int) {
	if into != nil && int64(cap(into)) >= total {
		all = into[:total]
	} else {
		all = numa.LargeBytes(int(total))
	}
	counts, displs = make([]C.int, len(lens)), make([]C.int, len(lens))
	off := 0
	for q, n := range lens {
		counts[q], displs[q] = C.int(n), C.int(off)
		off += int(n)
	}
	return all, counts, displs
}

func ptrC(s []C.int) *C.int {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// split cuts all into size consecutive buffers of length lenOf(q), each
// with its capacity capped so that appending to one never overwrites the
// next.
func split(all []byte, lenOf func(q int) int, size int) [][]byte {
	out := make([][]byte, size)
	off := 0
	for q := range out {
		n := lenOf(q)
		out[q] = all[off : off+n : off+n]
		off += n
	}
	return out
}

func (m *mpiComm) checkTag(op opKind, tag int) error {
	if tag > m.maxTag {
		return fmt.Errorf("mpi: %s: tag %d above this MPI's limit %d", op, tag, m.maxTag)
	}
	return nil
}

func (m *mpiComm) Send(buf []byte, dest, tag int) error {
	if err := checkSend(dest, tag, m.size); err != nil {
		return err
	}
	if err := m.checkTag(opSend, tag); err != nil {
		return err
	}
	if len(buf) > math.MaxInt32 {
		return fmt.Errorf("mpi: send to rank %d: %d bytes exceed MPI's limit of %d", dest, len(buf), math.MaxInt32)
	}
	return mpiErr(opSend, C.xmc_send(ptr(buf), C.int(len(buf)), C.int(dest), C.int(tag)))
}

// Recv matches a message with MPI_Improbe and receives exactly that message
// with MPI_Mrecv, so that goroutines receiving concurrently (from AnySource
// in particular) can never take each other's message between probe and
// receive. It polls rather than blocking in MPI_Mprobe, because a blocked
// MPI call spins on a core: after a short spin it sleeps between polls, up
// to a millisecond, leaving the cores to computing goroutines while a
// listener waits.
func (m *mpiComm) Recv(src, tag int) ([]byte, int, error) {
	if err := checkRecv(src, tag, m.size); err != nil {
		return nil, 0, err
	}
	if err := m.checkTag(opRecv, tag); err != nil {
		return nil, 0, err
	}
	csrc := C.int(src)
	if src == AnySource {
		csrc = C.MPI_ANY_SOURCE
	}
	var flag, count, from C.int
	var msg C.MPI_Message
	for polls, pause := 0, time.Microsecond; ; polls++ {
		if err := mpiErr(opRecv, C.xmc_improbe(csrc, C.int(tag), &flag, &msg, &count, &from)); err != nil {
			return nil, 0, err
		}
		if flag != 0 {
			break
		}
		if polls < 100 {
			runtime.Gosched()
			continue
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
	buf := make([]byte, count)
	if err := mpiErr(opRecv, C.xmc_mrecv(ptr(buf), count, &msg)); err != nil {
		return nil, 0, err
	}
	return buf, int(from), nil
}

// Abort prints msg on stderr and ends the job with MPI_Abort. Should
// MPI_Abort not end this process (its node cut off from mpirun), this
// process exits by itself after abortGrace.
func (m *mpiComm) Abort(code int, msg string) {
	fmt.Fprintf(os.Stderr, "xmc: rank %d of %d aborts the job: %s\n", m.rank, m.size, msg)
	time.AfterFunc(abortGrace, func() { os.Exit(code) })
	m.world.Abort(code)
	os.Exit(code)
}
