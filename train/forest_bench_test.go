package train

import (
	"hash/maphash"
	"testing"

	"xmc/model"
	"xmc/numa"
)

// BenchmarkForestTreeBibtex measures training one tree on the bundled Bibtex
// split on one worker (ns/op is per tree).
func BenchmarkForestTreeBibtex(b *testing.B) {
	tr, _ := loadBibtex(b)
	p := DefaultForestParams()
	p, _ = p.Resolve(tr.D(), tr.L())
	pool := newTestPool(b, 1, 1)
	rep, err := numa.NewReplicas(pool, func(int) (*ForestData, error) { return NewForestData(tr, maphash.MakeSeed()), nil })
	if err != nil {
		b.Fatal(err)
	}
	trainer := NewForestTrainer(p, rep, 1)
	w := pool.Workers()[0]
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := trainer.Work(w, i); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForestPredictBibtex measures scoring the Bibtex test set with a
// 10-tree forest on one worker (ns/op is per test set).
func BenchmarkForestPredictBibtex(b *testing.B) {
	tr, te := loadBibtex(b)
	p := DefaultForestParams()
	p.Trees = 10
	p, _ = p.Resolve(tr.D(), tr.L())
	pool := newTestPool(b, 1, 1)
	f := &model.Forest{D: tr.D(), L: tr.L(), TotalTrees: p.Trees}
	for _, blob := range trainTrees(b, tr, p, pool) {
		t := new(model.Tree)
		if err := t.UnmarshalBinary(blob); err != nil {
			b.Fatal(err)
		}
		f.Trees = append(f.Trees, t)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.Predict(&te.X, 5, pool); err != nil {
			b.Fatal(err)
		}
	}
}
