package onevsall

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"xmc/model/linear"
	"xmc/numa"
	"xmc/numa/numatest"
)

// TestLabelsHelp checks Labels: with 2 units of 12 labels on 3 workers, the
// third helps train both, each unit's block holds its labels' rows in
// their order whoever trained them, and a label's error or panic, on a
// helper too, ends the training with an error, not a hang.
func TestLabelsHelp(t *testing.T) {
	units := [][]int32{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}}
	row := func(l int32) ([]int32, []float32) { return []int32{l, l + 100}, []float32{float32(l), -1} }
	for _, fail := range []string{"", "error", "panic"} {
		pool := numatest.Pool(t, 3, 1)
		ls := NewLabels(pool, func(w numa.Worker, l int32, into *linear.Block) error {
			time.Sleep(time.Millisecond) // for the third worker to join
			if l == 27 {
				switch fail {
				case "error":
					return errors.New("diverged")
				case "panic":
					panic("a bug")
				}
			}
			cols, w32 := row(l)
			into.AppendRow(l, cols, w32)
			return nil
		})
		// As the runner: each worker takes units from a queue, then helps.
		blocks := make([]linear.Block, len(units))
		next := make(chan int, len(units))
		for u := range units {
			next <- u
		}
		close(next)
		err := pool.Run(func(w numa.Worker) error {
			for u := range next {
				if err := ls.Train(w, units[u], &blocks[u]); err != nil {
					return err
				}
			}
			return ls.Help(w)
		})
		switch {
		case fail == "error" && (err == nil || !strings.Contains(err.Error(), "label 27: diverged")):
			t.Errorf("a label's error: %v, want it named", err)
		case fail == "panic" && (err == nil || !strings.Contains(err.Error(), "a bug")):
			t.Errorf("a label's panic: %v, want it reported", err)
		case fail != "":
		case err != nil:
			t.Fatal(err)
		default:
			for u, labels := range units {
				b := &blocks[u]
				for r, l := range labels {
					cols, w := b.Row(r)
					wc, ww := row(l)
					if b.Labels[r] != l || fmt.Sprint(cols, w) != fmt.Sprint(wc, ww) {
						t.Errorf("unit %d, row %d: label %d %v %v, want label %d %v %v", u, r, b.Labels[r], cols, w, l, wc, ww)
					}
				}
			}
			if ls.Helped() == 0 {
				t.Error("no label was trained by the worker without a unit")
			}
			t.Logf("%d labels of %d trained helping", ls.Helped(), 2*len(units[0]))
		}
	}
}
