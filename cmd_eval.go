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

func runEval(args []string) error {
	fs := newFlagSet("eval", "eval --data TEST [--train TRAIN] [--json OUT] SCORES [SCORES...]")
	var df pipeline.Input
	registerInput(fs, &df)
	var ef pipeline.EvalOptions
	registerEval(fs, &ef)
	var dataPath, split, trainPath, jsonOut string
	fs.StringVar(&dataPath, "data", "", "test data `FILE` holding the true labels")
	fs.StringVar(&split, "test-split", "", "DXML tstSplit `FILE`: rows of --data that were predicted")
	fs.StringVar(&trainPath, "train", "", "training data `FILE`, for the label propensities of PSP@k (without it, no propensity-scored metrics)")
	fs.StringVar(&jsonOut, "json", "", "also write the metrics as JSON to `FILE`")
	var show int
	var namesPath string
	fs.IntVar(&show, "show", 0, "print the first `N` rows of every score file, predicted and true labels side by side")
	fs.StringVar(&namesPath, "label-names", "", "with --show, name labels as `FILE` does (tab-separated id, name[, count, description], as labels.txt)")
	if err := parseFlags(fs, args, true); err != nil {
		return err
	}
	if dataPath == "" || fs.NArg() == 0 {
		return errors.New("give --data and at least one score file")
	}
	test, err := df.Load(dataPath, split, 0, 0)
	if err != nil {
		return err
	}
	var names data.LabelNames
	if namesPath != "" {
		if names, err = data.ReadLabelNames(namesPath); err != nil {
			return err
		}
	}
	var inv []float64
	if trainPath != "" {
		tr, err := df.Load(trainPath, "", test.D(), test.L())
		if err != nil {
			return err
		}
		if tr.L() != test.L() {
			return fmt.Errorf("%s has L=%d but %s has L=%d", trainPath, tr.L(), dataPath, test.L())
		}
		inv = metrics.InversePropensity(data.LabelCounts(&tr.Y), tr.N(), ef.PropA, ef.PropB)
	}
	ks := ef.Ks()
	files := fs.Args()
	all := make([]metrics.Metrics, len(files))
	for i, path := range files {
		L, rows, err := scores.Read(path)
		if err != nil {
			return err
		}
		if L > test.L() {
			return fmt.Errorf("%s scores %d labels but %s has L=%d", path, L, dataPath, test.L())
		}
		if len(rows) != test.N() {
			return fmt.Errorf("%s has %d rows but %s has %d", path, len(rows), dataPath, test.N())
		}
		if all[i], err = metrics.Evaluate(&test.Y, rows, inv, ks); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if show > 0 {
			fmt.Printf("%s, first %d rows (* marks a true label):\n", path, show)
			if err := scores.WriteReadable(os.Stdout, rows, &test.Y, names, show); err != nil {
				return err
			}
		}
	}
	if err := metrics.WriteTable(os.Stdout, files, all, ks); err != nil {
		return err
	}
	if jsonOut == "" {
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
	return atomicfile.Write(jsonOut, func(w *bufio.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}
