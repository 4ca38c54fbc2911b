package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"xmc/job"
)

// LoadSummaries reads every run summary among the *.json files of dir (not
// its subdirectories), in file-name order: from a Slurm sweep's
// "<nodes>x<threads>-r<rep>.json" files, from xmc-bench scale, or any others.
// The scaling.json and compare.json that bench writes beside the runs are
// passed over; any other JSON file that is not a summary (it lacks
// "xmc_version" or "command") is skipped and listed in skipped with the
// reason.
func LoadSummaries(dir string) (runs []*job.Summary, skipped []string, err error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("list summaries: %w", err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("list summaries in %s: %w", dir, err)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if name := filepath.Base(p); name == "scaling.json" || name == "compare.json" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("read summary: %w", err)
		}
		var s job.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: not JSON of a summary: %v", p, err))
			continue
		}
		if s.Version == "" || s.Command == "" {
			skipped = append(skipped, fmt.Sprintf("%s: not a run summary (no xmc_version or command)", p))
			continue
		}
		s.Source = p
		runs = append(runs, &s)
	}
	return runs, skipped, nil
}
