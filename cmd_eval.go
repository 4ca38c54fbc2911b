package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"xmc/atomicfile"
	"xmc/data"
	"xmc/metrics"
	"xmc/pipeline"
	"xmc/scores"
)

// evalFlags are the settings of xmc eval.
type evalFlags struct {
	in                                  pipeline.Input
	eval                                pipeline.EvalOptions
	dataPath, split, trainPath, jsonOut string
	labelsPath, trainLabels             string // NumPy format: the labels files
	show                                int
	namesPath                           string
}

func runEval(args []string) error {
	fs := newFlagSet("eval", "eval --data TEST [--train TRAIN] [--json OUT] SCORES [SCORES...]")
	var f evalFlags
	registerInput(fs, &f.in)
	registerEval(fs, &f.eval)
	fs.StringVar(&f.dataPath, "data", "", "test data `FILE` holding the true labels")
	fs.StringVar(&f.split, "test-split", "", "DXML tstSplit `FILE`: rows of --data that were predicted")
	fs.StringVar(&f.trainPath, "train", "", "training data `FILE`, for the label propensities of PSP@k (without it, no propensity-scored metrics)")
	fs.StringVar(&f.labelsPath, "labels-data", "", "with --format npz: the labels `FILE` of --data (default: named after it, X.tst.npz -> Y.tst.npz)")
	fs.StringVar(&f.trainLabels, "train-labels", "", "with --format npz: the labels `FILE` of --train (default: named after it)")
	fs.StringVar(&f.jsonOut, "json", "", "also write the metrics as JSON to `FILE`")
	fs.IntVar(&f.show, "show", 0, "print the first `N` rows of every score file, predicted and true labels side by side")
	fs.StringVar(&f.namesPath, "label-names", "", "with --show, name labels as `FILE` does (tab-separated id, name[, count, description], as labels.txt)")
	if err := parseFlags(fs, args, true); err != nil {
		return err
	}
	if f.dataPath == "" || fs.NArg() == 0 {
		return errors.New("give --data and at least one score file")
	}
	test, err := f.in.Load(f.dataPath, f.labelsPath, f.split, 0, 0)
	if err != nil {
		return err
	}
	var names data.LabelNames
	if f.namesPath != "" {
		if names, err = data.ReadLabelNames(f.namesPath); err != nil {
			return err
		}
	}
	inv, err := f.inversePropensity(test)
	if err != nil {
		return err
	}
	files := fs.Args()
	all := make([]metrics.Metrics, len(files))
	for i, path := range files {
		if all[i], err = f.evaluate(path, test, inv, names); err != nil {
			return err
		}
	}
	if err := metrics.WriteTable(os.Stdout, files, all, f.eval.Ks()); err != nil {
		return err
	}
	if f.jsonOut == "" {
		return nil
	}
	out := map[string]metrics.Metrics{}
	for i, n := range files {
		out[n] = all[i]
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(f.jsonOut, func(w *bufio.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// inversePropensity returns the labels' inverse propensities from the
// training data of --train, nil without it.
func (f *evalFlags) inversePropensity(test *data.Dataset) ([]float64, error) {
	if f.trainPath == "" {
		return nil, nil
	}
	tr, err := f.in.Load(f.trainPath, f.trainLabels, "", test.D(), test.L())
	if err != nil {
		return nil, err
	}
	if tr.L() != test.L() {
		return nil, fmt.Errorf("%s has L=%d but %s has L=%d", f.trainPath, tr.L(), f.dataPath, test.L())
	}
	return metrics.InversePropensity(data.LabelCounts(&tr.Y), tr.N(), f.eval.PropA, f.eval.PropB), nil
}

// evaluate returns the metrics of the score file at path against test,
// and prints its first rows with --show.
func (f *evalFlags) evaluate(path string, test *data.Dataset, inv []float64, names data.LabelNames) (metrics.Metrics, error) {
	L, rows, err := scores.Read(path)
	if err != nil {
		return nil, err
	}
	if L > test.L() {
		return nil, fmt.Errorf("%s scores %d labels but %s has L=%d", path, L, f.dataPath, test.L())
	}
	if len(rows) != test.N() {
		return nil, fmt.Errorf("%s has %d rows but %s has %d", path, len(rows), f.dataPath, test.N())
	}
	m, err := metrics.Evaluate(&test.Y, rows, inv, f.eval.Ks())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.show > 0 {
		fmt.Printf("%s, first %d rows (* marks a true label):\n", path, f.show)
		if err := scores.WriteReadable(os.Stdout, rows, &test.Y, names, f.show); err != nil {
			return nil, err
		}
	}
	return m, nil
}
