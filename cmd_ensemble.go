package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"xmc/job"
	"xmc/pipeline"
	"xmc/runner"
	"xmc/train/registry"
)

// defaultMembers are the members of xmc train --algo ensemble without
// --member: a forest, a one-vs-all linear model and a label tree with
// Parabel's loss and C, which lead at different P@k on different sets
// (docs/algorithms/ensemble.md).
var defaultMembers = []string{"forest", "ppdsparse", "plt --loss sqhinge --cost 1"}

// defaultHeldout is the fraction of the training rows that xmc train
// --algo ensemble holds out of its members' training to fit on. The
// bagged fit keeps near-equal weights where a few hundred rows cannot tell
// better ones, so the members gain more from the rows than the fit does
// (docs/algorithms/ensemble.md, "The held-out share, with the bagged
// fit").
const defaultHeldout = 0.01

// runEnsemble makes an ensemble file of trained models, its weights fitted
// on held-out rows.
func runEnsemble(args []string) error {
	fs := newFlagSet("ensemble", "ensemble --out FILE --heldout HELDOUT --model FILE --model FILE [...] [flags]")
	jo := job.Options{Version: buildVersion()}
	jo.Register(fs)
	c := pipeline.EnsembleConfig{TopK: 5}
	registerInput(fs, &c.Input)
	fs.Var((*stringList)(&c.Models), "model", "a member's model `FILE` (or manifest); give one per member")
	fs.StringVar(&c.HeldoutPath, "heldout", "", "labelled data `FILE` of rows that no member trained on, to fit the calibrations and weights on")
	fs.StringVar(&c.HeldoutLabels, "heldout-labels", "", "with --format npz: the labels `FILE` of --heldout (default: named after it)")
	fs.StringVar(&c.Out, "out", "", "the ensemble `FILE` to write (members are named relative to its directory)")
	fs.IntVar(&c.TopK, "top-k", c.TopK, "the weights maximise the mean of P@1, P@3 and P@5 up to this `K`")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed recorded in the ensemble's header")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	return pipeline.FitEnsemble(jo, c)
}

// runTrainEnsemble is xmc train --algo ensemble: its members are trained
// one after the other on the same ranks, and the ensemble file written.
func runTrainEnsemble(args []string) error {
	c := pipeline.EnsembleTrainConfig{Heldout: defaultHeldout}
	jo := job.Options{Version: buildVersion()}
	var algoFlag string
	var members stringList
	fs := newFlagSet("train", "train --algo ensemble --data TRAIN --model-out FILE [--member \"ALGO [FLAGS]\"]... [flags]")
	trainFlags(fs, &c.Train, &jo, &algoFlag)
	fs.Var(&members, "member", "a member: its algorithm and that algorithm's flags, as one `\"ALGO [FLAGS]\"` argument; give one per member (default: \""+strings.Join(defaultMembers, "\", \"")+"\")")
	fs.Float64Var(&c.Heldout, "heldout", c.Heldout, "fraction of the training rows, drawn by --seed, that no member trains on and the ensemble's calibrations and weights are fitted on")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	if algoFlag != "ensemble" {
		return fmt.Errorf("--algo %q: read as ensemble before parsing; give --algo once, as --algo NAME", algoFlag)
	}
	if len(members) == 0 {
		members = defaultMembers
	}
	for _, m := range members {
		member, err := parseMember(m)
		if err != nil {
			return err
		}
		c.Members = append(c.Members, member)
	}
	// The ensemble's checkpoint records the finished members; each member
	// keeps its own, beside its model.
	resolveCheckpoint(&c.Train)
	c.Train.ProgressBar = runner.IsTerminal(os.Stderr)
	return pipeline.TrainEnsemble(jo, c)
}

// parseMember reads one --member: an algorithm's name and its flags.
func parseMember(spec string) (pipeline.EnsembleMember, error) {
	fields := strings.Fields(spec)
	if len(fields) == 0 {
		return pipeline.EnsembleMember{}, errors.New("--member \"\": give an algorithm and its flags")
	}
	algo, err := registry.Lookup(fields[0])
	if err != nil {
		return pipeline.EnsembleMember{}, fmt.Errorf("--member %q: %w", spec, err)
	}
	tr := algo.New()
	fs := flag.NewFlagSet(algo.Name, flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	tr.Flags(fs)
	if err := fs.Parse(fields[1:]); err != nil {
		return pipeline.EnsembleMember{}, fmt.Errorf("--member %q: %w (xmc train -h lists the flags of --algo %s)", spec, err, algo.Name)
	}
	if fs.NArg() > 0 {
		return pipeline.EnsembleMember{}, fmt.Errorf("--member %q: unexpected %q", spec, fs.Arg(0))
	}
	return pipeline.EnsembleMember{Algorithm: algo.Name, Trainer: tr, Set: setFlags(fs)}, nil
}
