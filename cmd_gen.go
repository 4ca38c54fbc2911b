package main

import (
	"bufio"
	"errors"

	"xmc/atomicfile"
	"xmc/data"
)

func runGen(args []string) error {
	fs := newFlagSet("gen", "gen --out FILE [--n N --d D --l L --labels A --features F --exponent S --seed S --multi-class]")
	var c data.GenConfig
	var out string
	fs.StringVar(&out, "out", "", "write the dataset to `FILE` (XMC text format)")
	fs.IntVar(&c.N, "n", 10000, "instances")
	fs.IntVar(&c.D, "d", 5000, "features")
	fs.IntVar(&c.L, "l", 1000, "labels")
	fs.Float64Var(&c.AvgLabels, "labels", 3, "average labels per instance")
	fs.Float64Var(&c.AvgFeatures, "features", 50, "average features per instance")
	fs.Float64Var(&c.LabelExponent, "exponent", 1, "power-law exponent of the label frequencies")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed")
	fs.BoolVar(&c.MultiClass, "multi-class", false, "one label per instance (multi-class data; sets --labels to 1)")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	if out == "" {
		return errors.New("--out is required")
	}
	if c.MultiClass {
		c.AvgLabels = 1
	}
	if err := c.Validate(); err != nil {
		return err
	}
	return atomicfile.Write(out, func(w *bufio.Writer) error { return data.Generate(w, c) })
}
