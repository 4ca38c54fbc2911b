package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"xmc/atomicfile"
	"xmc/data"
	"xmc/job"
	"xmc/train"
)

// ProjectConfig describes a projection of a one-vs-all training's cost
// from samples of its labels: the labels, most frequent first, are cut
// into strata whose sizes grow geometrically (the head, then ranges Ratio
// times longer each), a sample of Sample labels of each stratum is trained
// (xmc train --label-range), in Pieces runs of consecutive labels at the
// middles of the stratum's equal parts, and each stratum's cost is its
// sample's, scaled by their sizes. A label's cost changes with its
// positives, which fall smoothly along the order, so the pieces stand for
// the labels around them; the head is trained whole. What a run
// costs whatever its labels (its workers' scratch, the solver's sorted
// rows, paid by each worker) is measured once, from one more run of as
// many labels as workers at the start of the last piece, and counted once
// rather than with each stratum.
type ProjectConfig struct {
	Launcher Launcher
	Layout   Layout
	// Data is the training file; Shape and N, when Data is empty, the
	// shape and rows of the generated data to train on.
	Data  string
	Shape Shape
	N     int
	Seed  uint64
	// Algorithms are the one-vs-all trainers projected.
	Algorithms []string
	// Sample is the labels trained per stratum, in Pieces runs, and Ratio
	// the growth of the strata.
	Sample, Pieces int
	Ratio          float64
	// TrainArgs are more xmc train flags of every run.
	TrainArgs []string
	// Dir receives the data, the summaries (reused when present) and logs.
	Dir      string
	Progress io.Writer
}

// Stratum is one stratum of a projection: labels From to To (excluded),
// most frequent first, and the sample trained of them.
type Stratum struct {
	From, To int
	// Pieces are the label ranges of the sample, a run each.
	Pieces []LabelRange
	// CoreS is the sample's core-seconds: the time the workers spent
	// training its labels (the summaries' profile, busy_s, over the ranks
	// and pieces).
	CoreS float64
	// Stats sums the trainer's figures of the sample's runs (the
	// summaries' trainer_stats, over the ranks and pieces).
	Stats map[string]float64
	// Projected is the stratum's projected core-seconds.
	Projected float64
}

// LabelRange is the labels From to To (excluded), most frequent first.
type LabelRange struct{ From, To int }

// String returns r as xmc train --label-range takes it.
func (r LabelRange) String() string { return fmt.Sprintf("%d:%d", r.From, r.To) }

// sampled returns the labels of s's sample.
func (s Stratum) sampled() int {
	n := 0
	for _, p := range s.Pieces {
		n += p.To - p.From
	}
	return n
}

// Projection is the projected cost of training every label of one
// algorithm.
type Projection struct {
	Algorithm string
	// Labels is the labels with a positive row, N the training rows.
	Labels, N int
	Strata    []Stratum
	// CoreS is the projected core-seconds of every label, SampledCoreS
	// what the samples cost, and SampledLabels their labels.
	CoreS, SampledCoreS float64
	SampledLabels       int
	// OverheadCoreS is what a run costs whatever its labels (each
	// worker's set-up): the run of a label per worker less those labels'
	// cost, as the last piece's run gives it.
	OverheadCoreS float64
	// workers are the workers of every run, ranks × threads.
	workers int
}

// strata cuts labels into the head [0, sample) and ranges ratio times
// longer each, and places in each a sample of sample labels in pieces runs,
// each at the middle of one of pieces equal parts of the stratum.
func strata(labels, sample, pieces int, ratio float64) []Stratum {
	var out []Stratum
	for from := 0; from < labels; {
		to := min(labels, max(from+sample, int(math.Ceil(float64(from)*ratio))))
		s := Stratum{From: from, To: to, Pieces: []LabelRange{{from, to}}}
		if to-from > sample {
			s.Pieces = s.Pieces[:0]
			for k := range pieces {
				lo, hi := from+(to-from)*k/pieces, from+(to-from)*(k+1)/pieces
				n := sample*(k+1)/pieces - sample*k/pieces
				start := min(max(lo, (lo+hi-n)/2), hi-n)
				s.Pieces = append(s.Pieces, LabelRange{start, start + n})
			}
		}
		out = append(out, s)
		from = to
	}
	return out
}

// trainableLabels returns the training rows of the data at path and the
// number of its labels with a positive row: the labels a one-vs-all
// trainer orders and trains.
func trainableLabels(path string) (n, labels int, err error) {
	ds, err := data.ReadFile(path, data.ReadOptions{})
	if err != nil {
		return 0, 0, err
	}
	for _, c := range data.LabelCounts(&ds.Y) {
		if c > 0 {
			labels++
		}
	}
	return ds.N(), labels, nil
}

// projectData returns the training file of c: Data, or generated data of
// c.Shape with c.N rows under c.Dir, generated unless present.
func projectData(c ProjectConfig) (string, error) {
	if c.Data != "" {
		return c.Data, nil
	}
	path := filepath.Join(c.Dir, "data", fmt.Sprintf("%s-n%d.txt", c.Shape.Name, c.N))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	ds, err := data.GenerateDataset(data.GenConfig{N: c.N, D: c.Shape.D, L: c.Shape.L, AvgLabels: c.Shape.AvgLabels,
		AvgFeatures: c.Shape.AvgFeatures, LabelExponent: 1, MultiClass: c.Shape.MultiClass, Seed: c.Seed})
	if err != nil {
		return "", fmt.Errorf("generate %s: %w", c.Shape.Name, err)
	}
	return path, atomicfile.Write(path, func(w *bufio.Writer) error { return data.WriteXMC(w, ds) })
}

// RunProjection trains the samples of every algorithm of c (those not
// done before) and returns the projections.
func RunProjection(ctx context.Context, c ProjectConfig) ([]Projection, error) {
	switch {
	case len(c.Algorithms) == 0:
		return nil, errors.New("project: give algorithms")
	case c.Pieces < 1 || c.Sample < c.Pieces || !(c.Ratio > 1):
		return nil, fmt.Errorf("project: want a sample of at least 1 label per piece and a ratio above 1, got %d labels, %d pieces and %v", c.Sample, c.Pieces, c.Ratio)
	case c.Data == "" && c.N < 10:
		return nil, fmt.Errorf("project: --n %d: need at least 10 rows", c.N)
	}
	if err := checkOwnFlags(c.TrainArgs, "ranks", "threads", "summary", "checkpoint", "data", "test", "algo", "model-out", "label-range", "labels-per-unit"); err != nil {
		return nil, err
	}
	if err := c.Launcher.Check(); err != nil {
		return nil, err
	}
	path, err := projectData(c)
	if err != nil {
		return nil, err
	}
	n, labels, err := trainableLabels(path)
	if err != nil {
		return nil, err
	}
	scratch := filepath.Join(c.Dir, "scratch.model")
	defer removeScratch(scratch)
	var out []Projection
	for _, algo := range c.Algorithms {
		p := Projection{Algorithm: algo, Labels: labels, N: n, Strata: strata(labels, c.Sample, c.Pieces, c.Ratio),
			workers: max(1, c.Layout.Ranks) * max(1, c.Layout.Threads)}
		var runs []studyRun
		for _, r := range p.ranges() {
			runs = append(runs, studyRun{Name: sampleRunName(algo, r), Args: func() ([]string, error) {
				removeScratch(scratch)
				// A label per unit: the sample's labels are dealt to every
				// worker, loading the machine as a whole training does.
				return append([]string{"--algo", algo, "--data", path, "--model-out", scratch, "--checkpoint", "none",
					"--seed", strconv.FormatUint(c.Seed, 10), "--label-range", r.String(), "--labels-per-unit", "1"}, c.TrainArgs...), nil
			}})
		}
		if err := runMissing(ctx, c.Launcher, c.Layout, c.Dir, runs, c.Progress); err != nil {
			return nil, err
		}
		if err := p.project(c.Dir); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ranges returns the label ranges p trains: every stratum's pieces, and
// the start of the last piece, for the overhead.
func (p *Projection) ranges() []LabelRange {
	var out []LabelRange
	for _, s := range p.Strata {
		out = append(out, s.Pieces...)
	}
	return append(out, p.overheadRange())
}

// lastPiece is the last piece of the last stratum.
func (p *Projection) lastPiece() LabelRange {
	last := p.Strata[len(p.Strata)-1].Pieces
	return last[len(last)-1]
}

// overheadRange is the first labels of the last piece, one per worker
// (but at most half the piece): a run in which every worker sets up once.
func (p *Projection) overheadRange() LabelRange {
	last := p.lastPiece()
	n := max(1, min(p.workers, (last.To-last.From)/2))
	return LabelRange{last.From, last.From + n}
}

// project reads the samples' summaries in dir and projects p's cost.
func (p *Projection) project(dir string) error {
	// run returns the worker time of the run of labels r, and adds its
	// trainer's figures to stats.
	run := func(r LabelRange, stats map[string]float64) (float64, error) {
		sum, err := job.ReadSummary(filepath.Join(dir, sampleRunName(p.Algorithm, r)+".json"))
		if err != nil {
			return 0, err
		}
		if sum.Status != "ok" {
			return 0, fmt.Errorf("project: the sample of labels %s of %s ended %q: give it the time to finish", r, p.Algorithm, sum.Status)
		}
		busy := 0.0
		for _, rank := range sum.Profile {
			busy += rank.BusyS
		}
		for _, rank := range sum.TrainerStats {
			for k, v := range rank {
				stats[k] += v
			}
		}
		return busy, nil
	}
	// The overhead: both runs pay it, and the labels of the longer one
	// beyond the shorter's cost as much as the shorter's on average.
	short, long := p.overheadRange(), p.lastPiece()
	shortS, err := run(short, map[string]float64{})
	if err != nil {
		return err
	}
	longS, err := run(long, map[string]float64{})
	if err != nil {
		return err
	}
	if extra := (long.To - long.From) - (short.To - short.From); extra > 0 {
		perLabel := max(0, (longS-shortS)/float64(extra))
		p.OverheadCoreS = max(0, shortS-perLabel*float64(short.To-short.From))
	}
	p.CoreS = p.OverheadCoreS
	for i := range p.Strata {
		s := &p.Strata[i]
		labelsS := 0.0 // the pieces' labels, less their runs' overhead
		s.Stats = map[string]float64{}
		for _, r := range s.Pieces {
			c, err := run(r, s.Stats)
			if err != nil {
				return err
			}
			s.CoreS += c
			labelsS += max(0, c-p.OverheadCoreS)
		}
		s.Projected = labelsS * float64(s.To-s.From) / float64(s.sampled())
		p.CoreS += s.Projected
		p.SampledCoreS += s.CoreS
		p.SampledLabels += s.sampled()
	}
	return nil
}

// LabelCosts returns p's strata as measured label costs, for xmc train
// --label-costs: each stratum's projected core-seconds a label, the runs'
// overhead left out.
func (p Projection) LabelCosts() *train.LabelCosts {
	c := &train.LabelCosts{}
	for _, s := range p.Strata {
		c.Strata = append(c.Strata, train.LabelStratum{From: s.From, To: s.To, PerLabel: s.Projected / float64(s.To-s.From)})
	}
	return c
}

// WriteLabelCosts writes p's LabelCosts to path, for xmc train
// --label-costs, with comments that say what c measured them on.
func WriteLabelCosts(path string, p Projection, c ProjectConfig) error {
	data := c.Data
	if data == "" {
		data = fmt.Sprintf("the %s shape's %d rows (seed %d)", c.Shape.Name, c.N, c.Seed)
	}
	return atomicfile.Write(path, func(w *bufio.Writer) error {
		return train.WriteLabelCosts(w, p.LabelCosts(),
			fmt.Sprintf("%s on %s: core-s a label by stratum of its %d labels with a positive row, most frequent first,", p.Algorithm, data, p.Labels),
			fmt.Sprintf("measured by xmc-bench project at %d×%d (ranks×threads); for xmc train --label-range PART/PARTS --label-costs", max(1, c.Layout.Ranks), max(1, c.Layout.Threads)))
	})
}

// sampleRunName names the run of one stratum's sample.
func sampleRunName(algo string, r LabelRange) string {
	return fmt.Sprintf("%s__labels-%d-%d", algo, r.From, r.To)
}

// WriteProjection writes p as a table: each stratum's labels, sample, the
// sample's core-seconds per label and the stratum's projected
// core-seconds and share, then the whole.
func WriteProjection(w io.Writer, p Projection) error {
	fmt.Fprintf(w, "%s: %d labels with a positive row, %d training rows; %d labels sampled (%.1f core-s)\n",
		p.Algorithm, p.Labels, p.N, p.SampledLabels, p.SampledCoreS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "labels\tsample\tcore-s/label\tprojected core-s\tshare\t")
	for _, s := range p.Strata {
		var pieces []string
		for _, r := range s.Pieces {
			pieces = append(pieces, r.String())
		}
		per := s.CoreS / float64(s.sampled())
		fmt.Fprintf(tw, "%d:%d\t%s\t%.4g\t%.4g\t%.1f%%\t\n", s.From, s.To, strings.Join(pieces, " "), per, s.Projected, 100*s.Projected/p.CoreS)
	}
	fmt.Fprintf(tw, "a run's overhead\t\t\t%.4g\t%.1f%%\t\n", p.OverheadCoreS, 100*p.OverheadCoreS/p.CoreS)
	fmt.Fprintf(tw, "all\t\t%.4g\t%.4g\t100%%\t\n", p.CoreS/float64(p.Labels), p.CoreS)
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "projected: %.4g core-seconds, %.3g h on one core, %.3g s on 100 cores\n", p.CoreS, p.CoreS/3600, p.CoreS/100); err != nil {
		return err
	}
	return writeLabelStats(w, p)
}

// writeLabelStats writes, per stratum, the trainer's figures of its sample
// per label (the run summaries' trainer_stats), if the trainer reports
// any.
func writeLabelStats(w io.Writer, p Projection) error {
	var keys []string
	for _, s := range p.Strata {
		for k := range s.Stats {
			if k != "labels" && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	fmt.Fprintln(w, "per label of each stratum's sample:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "labels\t%s\t\n", strings.Join(keys, "\t"))
	for _, s := range p.Strata {
		fmt.Fprintf(tw, "%d:%d", s.From, s.To)
		for _, k := range keys {
			fmt.Fprintf(tw, "\t%.4g", s.Stats[k]/float64(s.sampled()))
		}
		fmt.Fprintln(tw, "\t")
	}
	return tw.Flush()
}
