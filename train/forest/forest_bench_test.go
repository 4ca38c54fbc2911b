package forest

import (
	"fmt"
	"hash/maphash"
	"testing"

	"xmc/data"
	forestmodel "xmc/model/forest"
	"xmc/numa"
	"xmc/numa/numatest"
	"xmc/train/traintest"
)

// BenchmarkForestTreeBibtex measures training one tree on the bundled Bibtex
// split on one worker (ns/op is per tree).
func BenchmarkForestTreeBibtex(b *testing.B) {
	tr, _ := traintest.Bibtex(b)
	p := DefaultParams()
	pool := numatest.Pool(b, 1, 1)
	rep, err := numa.NewReplicas(pool, func(int) (*trainingData, error) { return newTrainingData(tr, maphash.MakeSeed(), true), nil })
	if err != nil {
		b.Fatal(err)
	}
	trainer := newGrower(p, rep, pool)
	w := pool.Workers()[0]
	b.ResetTimer()
	cpu := traintest.ProcessCPU()
	for i := 0; b.Loop(); i++ {
		if _, err := trainer.Work(w, i); err != nil {
			b.Fatal(err)
		}
	}
	traintest.ReportCPU(b, cpu)
}

// BenchmarkForestPredictBibtex measures scoring the Bibtex test set with a
// 10-tree forest on one worker (ns/op is per test set).
func BenchmarkForestPredictBibtex(b *testing.B) {
	tr, te := traintest.Bibtex(b)
	p := DefaultParams()
	p.Trees = 10
	pool := numatest.Pool(b, 1, 1)
	f := &forestmodel.Model{D: tr.D(), L: tr.L(), TotalTrees: p.Trees}
	for _, blob := range trainTrees(b, tr, p, pool) {
		if err := f.AddTree(blob); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	cpu := traintest.ProcessCPU()
	for b.Loop() {
		if _, err := f.Predict(&te.X, 5, pool); err != nil {
			b.Fatal(err)
		}
	}
	traintest.ReportCPU(b, cpu)
}

// BenchmarkForestTreeTogether measures growing one tree with 1 and 2
// workers together (TrainTreeTogether; ns/op is per tree) on Delicious and
// on data of Wiki10-31K's shape (D = 101,938, L = 30,938, 18.6 labels and
// 673 features per row, 20,000 rows, as `xmc-bench shapes` generates it):
// the speed-up of a forest with fewer trees than workers.
func BenchmarkForestTreeTogether(b *testing.B) {
	delicious, _ := traintest.Delicious(b)
	wiki10, err := data.GenerateDataset(data.GenConfig{N: 20000, D: 101938, L: 30938, AvgLabels: 18.64,
		AvgFeatures: 673.4, LabelExponent: 1, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, set := range []struct {
		name string
		ds   *data.Dataset
	}{{"delicious", delicious}, {"wiki10-31k-shape", wiki10}} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", set.name, workers), func(b *testing.B) {
				p := DefaultParams()
				f := newForestTrainer(b, set.ds, p, numatest.Pool(b, workers, 1))
				for i := 0; b.Loop(); i++ {
					if _, err := f.TrainTreeTogether(i % 4); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
