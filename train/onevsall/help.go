package onevsall

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"xmc/model/linear"
	"xmc/numa"
)

// TrainFunc appends label l's weights, trained on worker w, to into.
type TrainFunc func(w numa.Worker, l int32, into *linear.Block) error

// Labels deals the labels of the units being trained to the workers that
// train them, one label at a time: each unit's own worker (Train) and the
// workers that find no unit left to take (Help), so that a rank's last
// units do not leave its other workers idle at the end. A label's weights
// do not depend on the worker that trains it, so neither does a unit's
// block.
type Labels struct {
	train TrainFunc
	label *numa.PerWorker[*linear.Block] // each worker's label being trained

	mu     sync.Mutex
	open   []*unitLabels // the units being trained
	helped atomic.Int64  // labels trained by helpers
}

// NewLabels returns the Labels of the workers of pool, which train a label
// with train.
func NewLabels(pool *numa.Pool, train TrainFunc) *Labels {
	return &Labels{train: train, label: numa.NewPerWorker(pool, func(numa.Worker) *linear.Block { return &linear.Block{} })}
}

// unitLabels is a unit being trained: its labels, taken in order, and the
// weights of those trained, by place.
type unitLabels struct {
	labels []int32
	next   atomic.Int64 // the place of the next label to take

	mu   sync.Mutex
	done sync.Cond // signalled once every label is trained
	left int       // labels not yet trained
	rows []labelRow
	err  error // the first label's error
}

// labelRow is a label's trained weights, as a linear.Block stores them.
type labelRow struct {
	cols []int32
	w    []float32
}

// Train trains labels, a unit's, on worker w and the workers that help it,
// and sets into to their block, in their order.
func (ls *Labels) Train(w numa.Worker, labels []int32, into *linear.Block) error {
	u := &unitLabels{labels: labels, left: len(labels), rows: make([]labelRow, len(labels))}
	u.done.L = &u.mu
	ls.mu.Lock()
	ls.open = append(ls.open, u)
	ls.mu.Unlock()
	defer func() {
		ls.mu.Lock()
		ls.open = slices.DeleteFunc(ls.open, func(o *unitLabels) bool { return o == u })
		ls.mu.Unlock()
	}()
	ls.run(w, u)
	u.mu.Lock()
	for u.left > 0 {
		u.done.Wait()
	}
	err := u.err
	u.mu.Unlock()
	if err != nil {
		return err
	}
	into.Reset()
	for i, l := range labels {
		into.AppendRow(l, u.rows[i].cols, u.rows[i].w)
	}
	return nil
}

// Help is the runner.Plan.Help of a one-vs-all trainer: worker w, with no
// unit left to take, trains labels of the units that other workers train,
// those with the most labels left first, until none is left to take.
func (ls *Labels) Help(w numa.Worker) error {
	for {
		ls.mu.Lock()
		var best *unitLabels
		for _, u := range ls.open {
			if u.untaken() > 0 && (best == nil || u.untaken() > best.untaken()) {
				best = u
			}
		}
		ls.mu.Unlock()
		if best == nil {
			return nil
		}
		ls.helped.Add(int64(ls.run(w, best)))
	}
}

// Helped returns the number of labels trained by workers helping others.
func (ls *Labels) Helped() int64 { return ls.helped.Load() }

// untaken is the number of u's labels that no worker has taken yet.
func (u *unitLabels) untaken() int { return max(0, len(u.labels)-int(u.next.Load())) }

// run trains labels of u on worker w until none is left to take, and
// returns how many it trained.
func (ls *Labels) run(w numa.Worker, u *unitLabels) (n int) {
	for i := int(u.next.Add(1) - 1); i < len(u.labels); i = int(u.next.Add(1) - 1) {
		ls.trainLabel(w, u, i)
		n++
	}
	return n
}

// trainLabel trains u's label at place i on worker w and records it, with
// its error, a panic's too: the unit's worker waits for every label.
func (ls *Labels) trainLabel(w numa.Worker, u *unitLabels, i int) {
	b := ls.label.Get(w)
	b.Reset()
	var err error
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
			defer panic(r)
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		if err == nil && len(b.Labels) != 1 {
			err = fmt.Errorf("%d labels appended, want 1", len(b.Labels))
		}
		if err != nil {
			if u.err == nil {
				u.err = fmt.Errorf("label %d: %w", u.labels[i], err)
			}
		} else {
			cols, w := b.Row(0)
			u.rows[i] = labelRow{slices.Clone(cols), slices.Clone(w)}
		}
		if u.left--; u.left == 0 {
			u.done.Broadcast()
		}
	}()
	err = ls.train(w, u.labels[i], b)
}
