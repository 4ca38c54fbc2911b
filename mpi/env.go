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

// OneNodePML returns the OpenMPI point-to-point layer (PML) that Init
// selects, through OMPI_MCA_pml, for a job whose ranks all run on this node,
// and reports whether it selects one: only when the launcher shows that every
// rank is on this node (mpirun's OMPI_COMM_WORLD_LOCAL_SIZE equal to
// OMPI_COMM_WORLD_SIZE, or a one-node srun step) and the user chose no PML
// (OMPI_MCA_pml, which mpirun --mca pml also sets, always wins).
//
// The choice is ob1, whose shared-memory transport carries every message
// of a one-node job. Debian's OpenMPI otherwise picks the UCX PML, which
// probes network devices a one-node job never uses: on the development VM
// a two-rank MPI_Init took 0.33 s with UCX and 0.12 s with ob1. Jobs that
// span nodes keep OpenMPI's own choice (UCX on InfiniBand clusters).
func OneNodePML(lookup func(string) (string, bool)) (string, bool) {
	if _, set := lookup("OMPI_MCA_pml"); set {
		return "", false
	}
	size, okSize := lookup("OMPI_COMM_WORLD_SIZE")
	local, okLocal := lookup("OMPI_COMM_WORLD_LOCAL_SIZE")
	nodes, okNodes := lookup("SLURM_STEP_NUM_NODES")
	switch {
	case okSize && okLocal && size == local:
	case !okSize && okNodes && nodes == "1":
	default:
		return "", false
	}
	return "ob1", true
}
