package mpi

import "os"

// LaunchedByMPI reports whether the environment shows that this process was
// started by an MPI or PMIx launcher, and so should call Init rather than
// Launch: mpirun of OpenMPI (OMPI_COMM_WORLD_SIZE), any PMIx launcher
// including srun --mpi=pmix (PMIX_RANK), or a Slurm job step started with
// PMI-1 or PMI-2 (SLURM_STEP_ID with PMI_RANK or PMI_FD).
//
// A plain srun without an MPI plugin sets none of these: each task would be
// a job of its own, and reports false.
func LaunchedByMPI() bool { return launchedByMPI(os.LookupEnv) }

func launchedByMPI(lookup func(string) (string, bool)) bool {
	has := func(name string) bool { _, ok := lookup(name); return ok }
	if has("OMPI_COMM_WORLD_SIZE") || has("PMIX_RANK") {
		return true
	}
	return has("SLURM_STEP_ID") && (has("PMI_RANK") || has("PMI_FD"))
}
