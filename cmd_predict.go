package main

import (
	"xmc/job"
	"xmc/pipeline"
)

func runPredict(args []string) error {
	fs := newFlagSet("predict", "predict --model FILE [--model FILE...] --data TEST --out SCORES [--top-k K] [flags]")
	jo := job.Options{Version: buildVersion()}
	jo.Register(fs)
	var c pipeline.PredictConfig
	registerInput(fs, &c.Input)
	registerEval(fs, &c.Eval)
	fs.Var((*stringList)(&c.Models), "model", "model `FILE` (a model file, the manifest of a sharded model, or an ensemble file of xmc ensemble or train --algo ensemble); give it more than once to predict with the models' ensemble of equal weights")
	fs.StringVar(&c.DataPath, "data", "", "test data `FILE`")
	fs.StringVar(&c.DataLabels, "labels-data", "", "with --format npz: the labels `FILE` of --data (default: named after it, X.tst.npz -> Y.tst.npz; none: predict without labels)")
	fs.StringVar(&c.TestSplit, "test-split", "", "DXML tstSplit `FILE`: rows of --data to predict")
	fs.StringVar(&c.Out, "out", "", "write the scores to `FILE` (XMC score format; a SciPy CSR matrix, as pyxclib reads, if FILE ends in .npz)")
	fs.StringVar(&c.PredictOn, "predict-on", pipeline.PredictOnRanks, "ranks (each rank scores with its part of the model, merged on rank 0) or root (rank 0 scores alone)")
	fs.IntVar(&c.Show, "show", 0, "print the first `N` rows' predictions, with their true labels, to standard output")
	fs.StringVar(&c.LabelNames, "label-names", "", "with --show, name labels as `FILE` does (tab-separated id, name[, count, description], as labels.txt)")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	return pipeline.Predict(jo, c)
}
