package job

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// rankHandler is a slog.Handler writing one line per record, prefixed with
// the rank ("[rank 3] 12:04:05 INFO trained tree=7"), so that the merged
// output of many ranks in a Slurm output file stays readable. The standard
// text handler puts attributes after the message, which buries the rank.
type rankHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	rank  int
	level slog.Level
	attrs string
}

// NewRankLogger returns a logger writing to w one line per record, prefixed
// with rank, and dropping records below level.
func NewRankLogger(w io.Writer, rank int, level slog.Level) *slog.Logger {
	return slog.New(&rankHandler{mu: new(sync.Mutex), w: w, rank: rank, level: level})
}

func (h *rankHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *rankHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "[rank %d] %s %-5s %s", h.rank, r.Time.Format(time.TimeOnly), r.Level, r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func writeAttr(b *strings.Builder, a slog.Attr) {
	v := a.Value.Resolve().String()
	if strings.ContainsAny(v, " \t\"=") {
		v = fmt.Sprintf("%q", v)
	}
	fmt.Fprintf(b, " %s=%s", a.Key, v)
}

func (h *rankHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range attrs {
		writeAttr(&b, a)
	}
	h2 := *h
	h2.attrs = b.String()
	return &h2
}

func (h *rankHandler) WithGroup(string) slog.Handler { return h }
