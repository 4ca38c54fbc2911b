package mpi

import "testing"

func TestLaunchedByMPI(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"no launcher", map[string]string{"HOME": "/root"}, false},
		{"mpirun", map[string]string{"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "0"}, true},
		{"srun --mpi=pmix", map[string]string{"SLURM_STEP_ID": "0", "PMIX_RANK": "3", "PMIX_NAMESPACE": "slurm.pmix.1.0"}, true},
		{"srun --mpi=pmi2", map[string]string{"SLURM_STEP_ID": "0", "PMI_FD": "7", "PMI_RANK": "1", "PMI_SIZE": "2"}, true},
		{"plain srun", map[string]string{"SLURM_STEP_ID": "0", "SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, false},
		{"PMI outside Slurm", map[string]string{"PMI_RANK": "1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			if got := launchedByMPI(lookup); got != tt.want {
				t.Errorf("launchedByMPI = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOneNodePML(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // "" = OpenMPI's own choice
	}{
		{"mpirun, one node", map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, "ob1"},
		{"mpirun, two nodes", map[string]string{"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, ""},
		{"mpirun --mca pml ucx", map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "OMPI_MCA_pml": "ucx"}, ""},
		{"user's empty choice", map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "OMPI_MCA_pml": ""}, ""},
		{"srun, one node", map[string]string{"PMIX_RANK": "0", "SLURM_STEP_NUM_NODES": "1"}, "ob1"},
		{"srun, two nodes", map[string]string{"PMIX_RANK": "0", "SLURM_STEP_NUM_NODES": "2"}, ""},
		{"srun with a user's PML", map[string]string{"PMIX_RANK": "0", "SLURM_STEP_NUM_NODES": "1", "OMPI_MCA_pml": "cm"}, ""},
		{"mpirun inside a many-node allocation", map[string]string{"OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "SLURM_STEP_NUM_NODES": "1"}, ""},
		{"no launcher", map[string]string{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			got, ok := OneNodePML(lookup)
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("OneNodePML = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
}
