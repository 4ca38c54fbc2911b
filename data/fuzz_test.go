package data

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"testing"
)

// realLines returns the first n lines of a test data file, for fuzz seeds.
func realLines(f *testing.F, path string, n int) []byte {
	file, err := os.Open(path)
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	var out []byte
	sc := bufio.NewScanner(file)
	for i := 0; i < n && sc.Scan(); i++ {
		out = append(append(out, sc.Bytes()...), '\n')
	}
	if err := sc.Err(); err != nil {
		f.Fatal(err)
	}
	return out
}

// checkAccepted fails unless err is a *ParseError, or d is valid and
// survives a write-read round trip unchanged.
func checkAccepted(t *testing.T, d *Dataset, err error, format Format) {
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("error %q (%T) is not a *ParseError", err, err)
		}
		return
	}
	checkValid(t, d)
	var buf bytes.Buffer
	write := WriteXMC
	if format == FormatLIBSVM {
		write = WriteLIBSVM
	}
	if err := write(&buf, d); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf, "round trip", ReadOptions{Format: format, D: d.D(), L: d.L()})
	if err != nil {
		t.Fatalf("reading back what was written: %v", err)
	}
	if !csrEqual(&back.X, &d.X) || !csrEqual(&back.Y, &d.Y) {
		t.Fatalf("round trip changed the data:\n%+v\n%+v", d, back)
	}
}

func FuzzReadXMC(f *testing.F) {
	bib := realLines(f, bibtexTrain, 3)
	f.Add(bib)
	f.Add(gzipBytes(f, bib))
	f.Add(realLines(f, deliciousTrain, 3))
	for _, s := range []string{
		"", "0 0 0\n", "1 4 3\n\n", "2 4 3\r\n2,0 3:0.5 1:2\r\n 0:1",
		"1 4 3\n0:1 2:1e-3\n", "1 5 5\n0 3:1 1:1 3:2\n", "1 5 5\n0,,1 1:1\n",
		"1 5 5\n0 1:nan\n", "1 5 5\n0 1:1e39\n", "1 5 5\n0 -1:1\n", "1 5 5\n0\t1:+.5e-2\n",
		"1 2147483647 2147483647\n2147483646 2147483646:1\n", "\x1f\x8b\x08\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Read(bytes.NewReader(data), "fuzz", ReadOptions{})
		checkAccepted(t, d, err, FormatXMC)
	})
}

func FuzzReadLIBSVM(f *testing.F) {
	f.Add([]byte("1,0 4:0.5 1:1\n 2:1\n"), uint16(0), uint16(0))
	f.Add([]byte("4 1:1 10:2\n"), uint16(10), uint16(5))
	f.Add([]byte("0 0:1\n"), uint16(0), uint16(0))
	f.Add([]byte("0 2:1 1:1 2:1\n"), uint16(0), uint16(0))
	f.Add([]byte("2147483646 2147483647:1\n"), uint16(0), uint16(0))
	f.Add([]byte("\n\n3:-1e-40\n"), uint16(3), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, dim, labels uint16) {
		d, err := Read(bytes.NewReader(data), "fuzz", ReadOptions{Format: FormatLIBSVM, D: int(dim), L: int(labels)})
		checkAccepted(t, d, err, FormatLIBSVM)
		if err == nil && ((dim > 0 && d.D() != int(dim)) || (labels > 0 && d.L() != int(labels))) {
			t.Fatalf("D, L = %d, %d, want %d, %d", d.D(), d.L(), dim, labels)
		}
	})
}

func FuzzReadSplit(f *testing.F) {
	f.Add([]byte("1\n2\n3\n"), 1, 5)
	f.Add([]byte("1 5\t2\r\n4 3 1\n"), 2, 5)
	f.Add([]byte("0\n"), 1, 5)
	f.Add([]byte("1\n1\n"), 1, 5)
	f.Add([]byte("99999999999999999999\n"), 1, 5)
	f.Add(gzipBytes(f, []byte("2\n3\n")), 1, 3)
	f.Fuzz(func(t *testing.T, data []byte, col, n int) {
		if n < 0 || n > 1<<16 {
			return // n is a row count from a parsed data file
		}
		rows, err := readSplitRows(bytes.NewReader(data), "fuzz", col, n)
		if err != nil {
			var pe *ParseError
			if col >= 1 && !errors.As(err, &pe) {
				t.Fatalf("error %q (%T) is not a *ParseError", err, err)
			}
			return
		}
		seen := make(map[int]bool)
		for _, r := range rows {
			if r < 0 || r >= n || seen[r] {
				t.Fatalf("row %d out of [0, %d) or repeated in %v", r, n, rows)
			}
			seen[r] = true
		}
		if len(rows) == 0 {
			t.Fatal("accepted a split without rows")
		}
	})
}

func FuzzReadMatrix(f *testing.F) {
	for _, path := range []string{"testdata/X.small.npz", "testdata/Y.small.npz", "testdata/dense.npy"} {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := readMatrix(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %q (%T) is not a *ParseError", err, err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}
