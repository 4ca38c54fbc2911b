package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"text/tabwriter"

	"github.com/dustin/go-humanize"

	"xmc/job"
)

// CopiesConfig describes a study's job-level ceiling: at each worker count
// W, W copies of the study's one-worker run at once, each a process of its
// own that shares nothing with the others but the machine (its cores'
// caches, memory bandwidth and clock). Their throughput against one copy
// alone is the most any layout of W workers could reach on this job,
// measured with the job's own mix of arithmetic and memory traffic, where
// Ceiling's loops each measure one kind of it.
type CopiesConfig struct {
	// Launcher runs every copy, as the layout of one rank of one thread.
	Launcher Launcher
	// Workers are the copy counts to run; 1 (a copy alone) is always run,
	// first in each repeat.
	Workers []int
	// Repeats runs of every count, in turn.
	Repeats int
	// TrainArgs are the study's xmc train flags (ScaleConfig.TrainArgs).
	TrainArgs []string
	// Dir receives the copies' summaries and logs, named
	// "<W>-r<repeat>-c<copy>".
	Dir string
	// Available is the memory the copies may take, in bytes (0: no check):
	// W copies are not started where W times the largest peak memory of
	// a copy alone so far exceeds it.
	Available uint64
	// Progress receives a line per count and repeat; nil discards them.
	Progress io.Writer
}

// CopiesPoint is the training time of Workers copies at once, in each
// repeat (every copy's), or why they were not run.
type CopiesPoint struct {
	Workers int
	TrainS  [][]float64 // per repeat, each copy's train_s
	Skipped string      // why the count was not run (memory), or ""
}

// MeanTrainS returns the median over the repeats of the copies' mean
// training time (0 if none ran).
func (p CopiesPoint) MeanTrainS() float64 {
	var means []float64
	for _, rep := range p.TrainS {
		means = append(means, meanSD(rep).Mean)
	}
	return Median(means)
}

// RunCopies runs the copies: in each repeat a copy alone, then every count
// of Workers above 1, its copies started together; it returns a point per
// count, the copy alone first. A failed copy ends the study.
func RunCopies(ctx context.Context, c CopiesConfig) ([]CopiesPoint, error) {
	if c.Repeats < 1 {
		return nil, fmt.Errorf("copies: repeats must be at least 1, got %d", c.Repeats)
	}
	counts := append([]int{1}, c.Workers...)
	for _, w := range counts {
		if w < 1 {
			return nil, fmt.Errorf("copies: counts must be at least 1, got %d", w)
		}
	}
	slices.Sort(counts)
	counts = slices.Compact(counts)
	if err := checkOwnFlags(c.TrainArgs, "ranks", "threads", "summary", "checkpoint", "model-out"); err != nil {
		return nil, err
	}
	logs := filepath.Join(c.Dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, fmt.Errorf("copies: %w", err)
	}
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	points := make([]CopiesPoint, len(counts))
	var aloneRSS int64
	for rep := 1; rep <= c.Repeats; rep++ {
		for k, w := range counts {
			p := &points[k]
			p.Workers = w
			if p.Skipped != "" {
				continue
			}
			if need := uint64(w) * uint64(aloneRSS); c.Available > 0 && w > 1 && len(p.TrainS) == 0 && need > c.Available {
				p.Skipped = fmt.Sprintf("%d copies would take about %s, more than the %s available",
					w, humanize.IBytes(need), humanize.IBytes(c.Available))
				fmt.Fprintf(progress, "copies ×%d: skipped: %s\n", w, p.Skipped)
				continue
			}
			times, rss, err := runCopies(ctx, c, w, rep, logs)
			if err != nil {
				return points, err
			}
			if w == 1 {
				aloneRSS = max(aloneRSS, rss)
			}
			p.TrainS = append(p.TrainS, times)
			fmt.Fprintf(progress, "copies ×%d rep %d: train %.3f s on the mean (%.3f-%.3f s)\n",
				w, rep, meanSD(times).Mean, slices.Min(times), slices.Max(times))
		}
	}
	return points, nil
}

// runCopies starts n copies of the one-worker run together and returns
// each one's training time and the largest peak memory of a copy.
func runCopies(ctx context.Context, c CopiesConfig, n, rep int, logs string) ([]float64, int64, error) {
	one := Layout{Ranks: 1, Threads: 1}
	times, rss := make([]float64, n), make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		name := fmt.Sprintf("%d-r%d-c%d", n, rep, i+1)
		summary := filepath.Join(c.Dir, name+".json")
		scratch := filepath.Join(c.Dir, name+".model")
		args := append([]string{"--model-out", scratch, "--checkpoint", "none", "--summary", summary}, c.TrainArgs...)
		wg.Go(func() {
			defer removeScratch(scratch)
			if _, err := runLogged(ctx, c.Launcher.Command(one, "train", args), filepath.Join(logs, name+".log")); err != nil {
				errs[i] = fmt.Errorf("copy %s: %w", name, err)
				return
			}
			s, err := job.ReadSummary(summary)
			if err != nil {
				errs[i] = fmt.Errorf("copy %s: %w", name, err)
				return
			}
			times[i], rss[i] = s.TrainS, largestRSS(s.PeakRSSBytes)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	return times, slices.Max(rss), nil
}

// WriteCopies writes points as a table, a row per count: the copies' mean
// training time, how much slower each ran than a copy alone, and the
// ceiling, count / slower, the speedup that W perfectly independent
// workers reach on this job. The first point must be the copy alone.
func WriteCopies(w io.Writer, points []CopiesPoint) error {
	if len(points) == 0 || points[0].Workers != 1 || points[0].MeanTrainS() == 0 {
		return errors.New("copies: no copy alone to compare with")
	}
	alone := points[0].MeanTrainS()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "copies\ttrain_s\tslower\tceiling\t")
	for _, p := range points {
		if p.Skipped != "" {
			fmt.Fprintf(tw, "%d\tskipped: %s\t\t\t\n", p.Workers, p.Skipped)
			continue
		}
		slower := p.MeanTrainS() / alone
		fmt.Fprintf(tw, "%d\t%.3f\t%.2f\t%.2f×\t\n", p.Workers, p.MeanTrainS(), slower, float64(p.Workers)/slower)
	}
	return tw.Flush()
}
