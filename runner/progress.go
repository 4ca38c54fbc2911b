package runner

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"xmc/mpi"
)

// Progress is told how many units are done out of the total.
type Progress interface {
	Done(done, total int)
	Finish()
}

// weight returns what unit u counts for in progress reports.
func (p Plan) weight(u int) int {
	if p.Weight == nil {
		return 1
	}
	return p.Weight(u)
}

// TotalWeight is the progress reports' total: the weight of every unit.
func (p Plan) TotalWeight() int {
	if p.Weight == nil {
		return p.Units
	}
	total := 0
	for u := range p.Units {
		total += p.Weight(u)
	}
	return total
}

// tracker counts finished units of all ranks on rank 0, by weight. Other
// ranks report the weight they finished: under the dynamic schedule with
// their requests for units; under the static one in a 4-byte message at
// most every progressInterval; and when they stop, in an 8-byte message
// with the weight still unreported and that of the units they loaded from
// a checkpoint. A goroutine of rank 0 receives the messages, which appear
// in the comm report under "send"/"recv".
type tracker struct {
	p        Plan
	total    int
	mu       sync.Mutex
	done     int // on rank 0: weight finished by all ranks
	resumed  int // on other ranks: weight loaded from the checkpoint
	received chan error
	// On other ranks: the weight finished and not yet reported, and when
	// the last progress message left.
	pending  atomic.Int64
	lastSent time.Time
	// piggyback: the dealer's requests carry the progress.
	piggyback bool
}

// progressInterval is the least time between two progress messages of a
// rank under the static schedule: a message per unit would be 10^5
// messages to rank 0 for a model of 10^5 label blocks.
const progressInterval = 250 * time.Millisecond

func (p Plan) startTracker(resumed int, piggyback bool) *tracker {
	t := &tracker{p: p, piggyback: piggyback, lastSent: time.Now()}
	if p.Comm.Rank() != 0 {
		// Units loaded from a checkpoint are reported in the final message.
		t.resumed = resumed
		return t
	}
	t.total = p.TotalWeight()
	t.add(resumed)
	if p.Comm.Size() > 1 {
		t.received = make(chan error, 1)
		go func() { t.received <- t.receive() }()
	}
	return t
}

func (t *tracker) receive() error {
	stopped := 0
	for stopped < t.p.Comm.Size()-1 {
		msg, _, err := t.p.Comm.Recv(mpi.AnySource, tagProgress)
		if err != nil {
			return fmt.Errorf("progress: %w", err)
		}
		switch len(msg) {
		case 4:
			t.add(int(binary.LittleEndian.Uint32(msg)))
		case 8:
			t.add(int(binary.LittleEndian.Uint64(msg)))
			stopped++
		default:
			return fmt.Errorf("progress: malformed message of %d bytes", len(msg))
		}
	}
	return nil
}

// unitDone reports a finished unit of the given weight.
func (t *tracker) unitDone(weight int) error {
	if t.p.Comm.Rank() == 0 {
		t.add(weight)
		return nil
	}
	t.pending.Add(int64(weight))
	if t.piggyback {
		return nil
	}
	t.mu.Lock()
	due := time.Since(t.lastSent) >= progressInterval
	if due {
		t.lastSent = time.Now()
	}
	t.mu.Unlock()
	if !due {
		return nil
	}
	return t.p.Comm.Send(binary.LittleEndian.AppendUint32(nil, uint32(t.take())), 0, tagProgress)
}

// take returns the weight finished on this rank and not yet reported, and
// counts it as reported.
func (t *tracker) take() int { return int(t.pending.Swap(0)) }

// add records n more finished weight and reports progress on rank 0.
func (t *tracker) add(n int) {
	if n == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done += n
	if t.p.Progress != nil {
		t.p.Progress.Done(t.done, t.total)
	}
}

// finish tells rank 0 that this rank has stopped (with the weight of the
// units it loaded from a checkpoint rather than reported one by one) and, on rank 0,
// waits until every rank has stopped.
//
// Ranks that finish early wait here, in a receive from any source, rather
// than in the next collective: the communicator's watchdog leaves such
// receives alone, so waiting for the slowest rank of an hours-long training
// is not mistaken for a dead node.
func (t *tracker) finish() error {
	c := t.p.Comm
	if c.Rank() != 0 {
		if err := c.Send(binary.LittleEndian.AppendUint64(nil, uint64(t.resumed+t.take())), 0, tagProgress); err != nil {
			return err
		}
		_, _, err := c.Recv(mpi.AnySource, tagAllDone)
		return err
	}
	var err error
	if t.received != nil {
		err = <-t.received
	}
	if t.p.Progress != nil {
		t.p.Progress.Finish()
	}
	if err != nil {
		return err
	}
	for r := 1; r < c.Size(); r++ {
		if err := c.Send(nil, r, tagAllDone); err != nil {
			return err
		}
	}
	return nil
}

// IsTerminal reports whether f is a terminal, where a progress bar helps;
// in a Slurm output file it would only add noise.
func IsTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// progressReport is the Progress that NewProgress returns.
type progressReport struct {
	log   *slog.Logger
	what  string
	total int
	bar   *progressbar.ProgressBar
	start time.Time

	mu       sync.Mutex
	lastLine time.Time
	lastDone int
}

// NewProgress returns the Progress of a training on rank 0, which reports
// the work done across ranks: a bar on standard error if bar (on a
// terminal), otherwise a log line every tenth of the work, and at least
// every 30 s, with the rate and the estimated time left. what names the
// work counted ("trees", "labels", "rounds").
func NewProgress(log *slog.Logger, what string, total int, bar bool) Progress {
	p := &progressReport{log: log, what: what, total: total, start: time.Now(), lastLine: time.Now()}
	if bar {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(what), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
	}
	return p
}

// Done records that done of total are finished.
func (p *progressReport) Done(done, total int) {
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
func (p *progressReport) Finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
