package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"xmc/atomicfile"
	"xmc/data"
)

// convertFlags are the settings of xmc convert.
type convertFlags struct {
	in                 data.ReadOptions
	out, outLabels, to string
	compress           bool
}

func runConvert(args []string) error {
	fs := newFlagSet("convert", "convert --data IN [--format F] --out OUT [--to xmc|libsvm|npz] [--labels-out FILE]")
	var f convertFlags
	var dataPath string
	fs.StringVar(&dataPath, "data", "", "dataset `FILE` to convert")
	fs.Var(&f.in.Format, "format", "format of --data: xmc, libsvm or npz")
	fs.StringVar(&f.in.Labels, "labels-data", "", "with --format npz: the labels `FILE` of --data (default: named after it, X.trn.npz -> Y.trn.npz)")
	fs.StringVar(&f.out, "out", "", "write the dataset to `FILE` (with --to npz, its features)")
	fs.StringVar(&f.to, "to", "", "format to write: xmc, libsvm or npz (default: npz if --out ends in .npz, else xmc)")
	fs.StringVar(&f.outLabels, "labels-out", "", "with --to npz: write the labels to `FILE` (default: named after --out, X.trn.npz -> Y.trn.npz)")
	fs.BoolVar(&f.compress, "compress", false, "with --to npz: deflate the arrays, as scipy.sparse.save_npz does by default (smaller, slower to read)")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	if dataPath == "" || f.out == "" {
		return errors.New("--data and --out are required")
	}
	to, err := f.format()
	if err != nil {
		return err
	}
	if to == data.FormatNPZ && f.outLabels == "" {
		if f.outLabels, err = data.LabelsPath(f.out); err != nil {
			return fmt.Errorf("--labels-out: %w", err)
		}
	}
	d, err := data.ReadFile(dataPath, f.in)
	if err != nil {
		return err
	}
	switch to {
	case data.FormatXMC:
		return atomicfile.Write(f.out, func(w *bufio.Writer) error { return data.WriteXMC(w, d) })
	case data.FormatLIBSVM:
		return atomicfile.Write(f.out, func(w *bufio.Writer) error { return data.WriteLIBSVM(w, d) })
	}
	return writeBoth(
		f.out, func(w io.Writer) error { return data.WriteNPZ(w, &d.X, f.compress) },
		f.outLabels, func(w io.Writer) error { return data.WriteNPZ(w, &d.Y, f.compress) })
}

// format returns the format to write, from --to or the name of --out.
func (f *convertFlags) format() (data.Format, error) {
	if f.to == "" {
		if strings.HasSuffix(f.out, ".npz") {
			return data.FormatNPZ, nil
		}
		return data.FormatXMC, nil
	}
	to, err := data.ParseFormat(f.to)
	if err != nil {
		return 0, fmt.Errorf("--to: %w", err)
	}
	return to, nil
}

// writeBoth writes two files, the features and the labels of a dataset:
// both appear, or neither, if writing either fails.
func writeBoth(path1 string, write1 func(io.Writer) error, path2 string, write2 func(io.Writer) error) error {
	var files []*atomicfile.File
	defer func() {
		for _, f := range files {
			f.Abort()
		}
	}()
	for _, w := range []struct {
		path  string
		write func(io.Writer) error
	}{{path1, write1}, {path2, write2}} {
		f, err := atomicfile.Create(w.path)
		if err != nil {
			return fmt.Errorf("write %s: %w", w.path, err)
		}
		files = append(files, f)
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := w.write(bw); err != nil {
			return fmt.Errorf("write %s: %w", w.path, err)
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("write %s: %w", w.path, err)
		}
	}
	for _, f := range files {
		if err := f.Commit(); err != nil {
			return fmt.Errorf("write %s: %w", f.Path(), err)
		}
	}
	return nil
}
