package main

import (
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// isTerminal reports whether f is a terminal, where a progress bar helps;
// in a Slurm output file it would only add noise.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// progress reports units done across ranks: a bar on a terminal, otherwise a
// log line every tenth of the work (and at least every 30 s), with rate and
// estimated time left.
type progress struct {
	log   *slog.Logger
	what  string
	total int
	bar   *progressbar.ProgressBar
	start time.Time

	mu       sync.Mutex
	lastLine time.Time
	lastDone int
}

func newProgress(log *slog.Logger, what string, total int, bar bool) *progress {
	p := &progress{log: log, what: what, total: total, start: time.Now(), lastLine: time.Now()}
	if bar {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(what), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
	}
	return p
}

// Done records that done of total units are finished.
func (p *progress) Done(done, total int) {
	if p.bar != nil {
		p.bar.Set(done)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	step := max(1, total/10)
	if done/step == p.lastDone/step && time.Since(p.lastLine) < 30*time.Second && done != total {
		return
	}
	p.lastDone, p.lastLine = done, time.Now()
	elapsed := time.Since(p.start)
	rate := float64(done) / elapsed.Seconds()
	eta := time.Duration(float64(total-done)/rate) * time.Second
	p.log.Info("progress", p.what, done, "of", total, "per_s", round2(rate), "eta", eta.Round(time.Second))
}

// Finish ends the bar.
func (p *progress) Finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
