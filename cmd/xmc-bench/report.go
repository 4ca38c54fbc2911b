package main

import (
	"fmt"
	"os"
	"path/filepath"

	"xmc/bench"
	"xmc/internal/cli"
)

// runReport tabulates and plots the run summaries of one directory, a
// scaling study, or of several, each a study written into a folder of
// --out named after its directory, beside their overview.
func runReport(args []string) error {
	fs := newFlagSet("report", "report [--out DIR] SUMMARY_DIR [SUMMARY_DIR...]")
	var out string
	fs.StringVar(&out, "out", "", "write scaling.json, scaling.csv and the plots to `DIR` (default: SUMMARY_DIR); with several directories, each study to DIR/NAME (NAME: its directory's name) and their overview (overview.md, .json, .csv, .png, .svg) to DIR")
	if err := cli.Parse(fs, args, true); err != nil {
		return err
	}
	dirs := fs.Args()
	if len(dirs) == 0 || len(dirs) > 1 && out == "" {
		fmt.Fprintf(fs.Output(), "xmc-bench report: give a directory of run summaries, or several and --out\n")
		fs.Usage()
		return errUsage
	}
	if len(dirs) == 1 {
		if out == "" {
			out = dirs[0]
		}
		s, err := loadStudy(dirs[0])
		if err != nil {
			return err
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		return writeScaling(s, out)
	}
	names := make([]string, len(dirs))
	studies := make([]*bench.Scaling, len(dirs))
	for i, dir := range dirs {
		names[i] = filepath.Base(filepath.Clean(dir))
		s, err := loadStudy(dir)
		if err != nil {
			return err
		}
		studies[i] = s
	}
	o, err := bench.NewOverview(names, studies)
	if err != nil {
		return err
	}
	for i, s := range studies {
		dir := filepath.Join(out, names[i])
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		fmt.Printf("== %s\n", names[i])
		if err := writeScaling(s, dir); err != nil {
			return err
		}
	}
	fmt.Println("== overview")
	return writeStudy(o, "overview", out)
}

// loadStudy aggregates the run summaries of dir into a scaling study,
// naming on stderr the files it skipped.
func loadStudy(dir string) (*bench.Scaling, error) {
	runs, skipped, err := bench.LoadSummaries(dir)
	if err != nil {
		return nil, err
	}
	for _, s := range skipped {
		fmt.Fprintf(os.Stderr, "skipped %s\n", s)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no run summaries in %s (write them with xmc train --summary FILE)", dir)
	}
	return bench.Aggregate(runs)
}
