package job

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"xmc/atomicfile"
	"xmc/mpi"
)

// Balance describes how a training run's units spread over the ranks.
type Balance struct {
	// Schedule is the runner's schedule: static or dynamic.
	Schedule string `json:"schedule"`
	// BusyS is, per rank, the seconds from the start of training until the
	// rank had no unit left to compute, and Units the units it computed.
	BusyS []float64 `json:"busy_s"`
	Units []int64   `json:"units"`
	// ScheduleS is, per rank, the seconds its workers waited for units
	// from rank 0 under the dynamic schedule: the schedule's cost.
	ScheduleS []float64 `json:"schedule_s,omitempty"`
	// Imbalance is the largest BusyS over their mean: 1 is a perfect
	// balance, and the time lost to imbalance is (Imbalance − 1)/Imbalance
	// of the training time.
	Imbalance float64 `json:"imbalance"`
}

// Summary is the JSON record of one xmc run, written by --summary: the
// common currency of scaling studies and comparisons (package bench reads
// it). Phase times are the maximum over ranks (the slowest rank sets the
// pace of a bulk-synchronous job).
type Summary struct {
	Version        string            `json:"xmc_version"`
	CommandLine    []string          `json:"command_line"`
	Command        string            `json:"command"`
	Algorithm      string            `json:"algorithm,omitempty"`
	Status         string            `json:"status"` // "ok" or "interrupted"
	Backend        string            `json:"backend"`
	Ranks          int               `json:"ranks"`
	ThreadsPerRank int               `json:"threads_per_rank"`
	NUMADomains    int               `json:"numa_domains"`
	Hosts          []string          `json:"hosts"`
	Slurm          map[string]string `json:"slurm,omitempty"`

	LoadS    float64 `json:"load_s"`
	TrainS   float64 `json:"train_s"`
	GatherS  float64 `json:"gather_s"`
	WriteS   float64 `json:"write_s"`
	PredictS float64 `json:"predict_s"`
	EvalS    float64 `json:"eval_s"`
	WallS    float64 `json:"wall_s"`

	Metrics      map[string]float64 `json:"metrics,omitempty"`
	PeakRSSBytes []int64            `json:"peak_rss_bytes"`
	ModelBytes   int64              `json:"model_bytes,omitempty"`
	// ModelUnits is the units (trees, label blocks) of the model written,
	// and ModelBytesPerUnit its bytes per unit.
	ModelUnits        int     `json:"model_units,omitempty"`
	ModelBytesPerUnit float64 `json:"model_bytes_per_unit,omitempty"`
	// TestRows is the rows scored, and PredictMSPerRowCore the prediction
	// time per row and core: PredictS × ranks × threads / TestRows, in ms.
	TestRows            int             `json:"test_rows,omitempty"`
	PredictMSPerRowCore float64         `json:"predict_ms_per_row_core,omitempty"`
	Params              json.RawMessage `json:"params,omitempty"`
	Data                map[string]any  `json:"data,omitempty"`
	Comm                []mpi.Stats     `json:"comm"`
	// Balance is how the training work spread over the ranks.
	Balance *Balance `json:"balance,omitempty"`
	// Profile is, per rank, where its training time went (see Profile).
	Profile []Profile `json:"profile,omitempty"`
	// TrainerStats holds, per rank, the figures the trainer reports of its
	// training (the MEMOIR index's recall per epoch, the memory of a rank's
	// class blocks).
	TrainerStats []map[string]float64 `json:"trainer_stats,omitempty"`

	// Source is the file the summary was read from (set by ReadSummary,
	// not stored), for messages that name a run.
	Source string `json:"-"`
}

// Phases lists the phase names in the order of Summary's phase fields; a
// phase's time is recorded as "<name>_s".
var Phases = [...]string{"load", "train", "gather", "write", "predict", "eval"}

// MSPerRowCore returns the prediction time per row and core, in ms, of a
// run that scored rows rows.
func (s *Summary) MSPerRowCore(rows int) float64 {
	return 1000 * s.PredictS * float64(s.Ranks*s.ThreadsPerRank) / float64(rows)
}

// SetPhases stores the phase times given in the order of Phases, and the
// figures derived from them.
func (s *Summary) SetPhases(t []float64) {
	s.LoadS, s.TrainS, s.GatherS, s.WriteS, s.PredictS, s.EvalS = t[0], t[1], t[2], t[3], t[4], t[5]
	if s.TestRows > 0 {
		s.PredictMSPerRowCore = s.MSPerRowCore(s.TestRows)
	}
	if s.ModelUnits > 0 {
		s.ModelBytesPerUnit = float64(s.ModelBytes) / float64(s.ModelUnits)
	}
}

// WriteFile writes the summary as indented JSON, atomically.
func (s *Summary) WriteFile(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return atomicfile.Write(path, func(w *bufio.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// ReadSummary reads a summary written by WriteFile.
func ReadSummary(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read summary %s: %w", path, err)
	}
	s.Source = path
	return &s, nil
}
