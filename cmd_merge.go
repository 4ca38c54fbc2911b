package main

import (
	"errors"
	"fmt"

	"xmc/model/linear"
)

// runMerge joins label-range models (xmc train --label-range) into the
// model of every label.
func runMerge(args []string) error {
	fs := newFlagSet("merge", "merge --out FILE RANGE-MODEL...")
	out := fs.String("out", "", "the whole model's `FILE` (required)")
	if err := parseFlags(fs, args, true); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("merge: give --out")
	}
	h, err := linear.MergeRanges(fs.Args(), *out)
	if err != nil {
		return err
	}
	fmt.Printf("merged %d range models into %s: %s, %d labels in %d blocks, %d weights\n",
		fs.NArg(), *out, h.Algorithm, h.Counts["labels"], h.Counts["units"], h.Counts["nnz"])
	return nil
}
