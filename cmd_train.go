package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"xmc/internal/cli"
	"xmc/job"
	"xmc/pipeline"
	"xmc/runner"
	"xmc/train"
	"xmc/train/registry"
)

// trainFlags adds the flags of xmc train that every algorithm shares.
func trainFlags(fs *flag.FlagSet, c *pipeline.TrainConfig, jo *job.Options, algo *string) {
	jo.Register(fs)
	registerInput(fs, &c.Input)
	registerEval(fs, &c.Eval)
	var names []string
	for _, a := range registry.Algorithms() {
		names = append(names, a.Name)
	}
	fs.StringVar(algo, "algo", registry.Default, "algorithm: "+strings.Join(names, ", ")+" (its flags are listed below), or ensemble (by default a forest, PPDSparse and a label tree, see --member)")
	fs.StringVar(&c.DataPath, "data", "", "training data `FILE` (or the DXML X_data.txt with --train-split)")
	fs.StringVar(&c.TrainSplit, "train-split", "", "DXML trSplit `FILE`: rows of --data to train on")
	fs.StringVar(&c.TestPath, "test", "", "test data `FILE`: evaluate after training")
	fs.StringVar(&c.DataLabels, "labels-data", "", "with --format npz: the labels `FILE` of --data (default: named after it, X.trn.npz -> Y.trn.npz)")
	fs.StringVar(&c.TestLabels, "test-labels", "", "with --format npz: the labels `FILE` of --test (default: named after it)")
	fs.StringVar(&c.TestSplit, "test-split", "", "DXML tstSplit `FILE`: rows of --data to test on")
	fs.StringVar(&c.ModelOut, "model-out", "", "write the model to `FILE`")
	fs.BoolVar(&c.Shard, "shard", false, "write one model file per rank plus a manifest at --model-out, instead of gathering")
	fs.Int64Var(&c.ShardAbove, "shard-above", 8<<30, "shard the model, as --shard, when its units add up to more than `BYTES` (0: only with --shard)")
	fs.StringVar(&c.Checkpoint, "checkpoint", "", "directory keeping finished work for resumption (default: <model-out>.ckpt; \"none\" disables)")
	fs.DurationVar(&c.CheckpointEvery, "checkpoint-every", time.Minute, "save finished work to the checkpoint at most this long after it finishes, together (0: at once); a signal or --time-limit saves it all before exit")
	fs.StringVar(&c.PredictOn, "predict-on", pipeline.PredictOnRanks, "with --test: ranks (each rank scores with its part of the model, merged on rank 0) or root (rank 0 scores with the gathered model)")
	fs.StringVar(&c.Schedule, "schedule", "", "how units are dealt to ranks: static (unit u on rank u mod P) or dynamic (rank 0 hands them out on request); default: the algorithm's")
	fs.StringVar(&c.ScoresOut, "scores-out", "", "with --test: also write the test scores to `FILE` (as --out of predict: .npz for a SciPy CSR matrix)")
	fs.Var(&c.Labels, "label-range", "train only these labels, most frequent first: `FROM:TO` (from 0, TO excluded or left out) or PART/PARTS (parts of about equal cost, PART from 0), for a job array whose models xmc merge joins (dismec, ppdsparse)")
	fs.Func("label-costs", "with --label-range PART/PARTS: cut the parts by the measured costs in `FILE` (the label-costs file of xmc-bench project on the same data) rather than the trainer's estimate", func(path string) error {
		costs, err := train.ReadLabelCosts(path)
		c.Labels.Costs = costs
		return err
	})
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed: the same seed gives the same model for any number of ranks, threads and NUMA domains")
}

func runTrain(args []string) error {
	name := cli.FlagValue(args, "algo", registry.Default)
	if name == "ensemble" {
		return runTrainEnsemble(args)
	}
	algo, err := registry.Lookup(name)
	if err != nil {
		return err
	}
	c := pipeline.TrainConfig{Algorithm: algo.Name, Trainer: algo.New()}
	jo := job.Options{Version: buildVersion()}
	var algoFlag string
	fs := newFlagSet("train", "train --algo ALGO --data TRAIN [--test TEST] [--model-out FILE] [flags]")
	trainFlags(fs, &c, &jo, &algoFlag)
	c.Trainer.Flags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: xmc train --algo ALGO --data TRAIN [--test TEST] [--model-out FILE] [flags]\n")
		printFlags(fs, "Flags of every algorithm", func(f *flag.FlagSet) { trainFlags(f, &pipeline.TrainConfig{}, &job.Options{}, new(string)) })
		for _, a := range registry.Algorithms() {
			printFlags(fs, fmt.Sprintf("Flags of --algo %s (%s)", a.Name, a.Summary), a.New().Flags)
		}
	}
	if err := otherAlgorithmsFlags(fs, args, algo.Name); err != nil {
		return err
	}
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	if algoFlag != algo.Name {
		return fmt.Errorf("--algo %q: read as %q before parsing; give --algo once, as --algo NAME", algoFlag, algo.Name)
	}
	c.Set = setFlags(fs)
	resolveCheckpoint(&c)
	c.ProgressBar = runner.IsTerminal(os.Stderr)
	return pipeline.Train(jo, c)
}

// resolveCheckpoint sets the checkpoint directory that --checkpoint means:
// <model-out>.ckpt by default, none (empty) for "none".
func resolveCheckpoint(c *pipeline.TrainConfig) {
	if c.Checkpoint == "" && c.ModelOut != "" {
		c.Checkpoint = c.ModelOut + ".ckpt"
	}
	if c.Checkpoint == "none" {
		c.Checkpoint = ""
	}
}

// otherAlgorithmsFlags reports a flag of args that fs lacks but another
// algorithm has: a flag that the chosen algorithm would not use.
func otherAlgorithmsFlags(fs *flag.FlagSet, args []string, algo string) error {
	for _, name := range flagNames(args) {
		if fs.Lookup(name) != nil {
			continue
		}
		for _, a := range registry.Algorithms() {
			other := flag.NewFlagSet(a.Name, flag.ContinueOnError)
			a.New().Flags(other)
			if other.Lookup(name) != nil {
				return fmt.Errorf("-%s is a flag of --algo %s, not of --algo %s (xmc train -h lists the flags of each)", name, a.Name, algo)
			}
		}
	}
	return nil
}
