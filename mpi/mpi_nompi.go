//go:build !mpi

package mpi

import "errors"

// Backend names the MPI implementation linked into this binary: "none"
// when built without the mpi build tag, so only Launch is available.
const Backend = "none"

// Init would join the MPI job this process was launched in. Built without
// the mpi build tag, there is no MPI to join, and Init says so.
func Init() (Comm, error) {
	return nil, errors.New("mpi: this xmc was built without MPI support, so it cannot join a job " +
		"started by mpirun or srun: rebuild with -tags mpi (make build builds the MPI binary xmc-mpi), " +
		"or run it without a launcher and use in-process ranks")
}

// Finalize ends MPI. Built without MPI there is nothing to end.
func Finalize() error { return nil }
