package data

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadSplitBibtex checks that the split-format copy of Bibtex gives back
// train.txt and test.txt row for row.
func TestReadSplitBibtex(t *testing.T) {
	dataPath := filepath.Join(bibtexSplitDir, "Bibtex_data.txt")
	tests := []struct {
		split, want string
	}{
		{"bibtex_trSplit.txt", bibtexTrain},
		{"bibtex_tstSplit.txt", bibtexTest},
	}
	for _, tt := range tests {
		t.Run(tt.split, func(t *testing.T) {
			got, err := ReadSplit(dataPath, filepath.Join(bibtexSplitDir, tt.split), 1, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := ReadFile(tt.want, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkValid(t, got)
			checkEqual(t, got, want)
		})
	}
	if _, err := ReadSplit(dataPath, filepath.Join(bibtexSplitDir, "bibtex_trSplit.txt"), 2, ReadOptions{}); err == nil ||
		!strings.HasSuffix(err.Error(), "bibtex_trSplit.txt:1:2: line has 1 columns, split column 2 requested") {
		t.Errorf("column 2 of a one-column split file: %v", err)
	}
}

func TestReadSplitRows(t *testing.T) {
	tests := []struct {
		name  string
		input string
		col   int
		want  []int
	}{
		{"one column", "3\n1\n", 1, []int{2, 0}},
		{"second column, tabs and CRLF", "1\t5\r\n2  4 \r\n", 2, []int{4, 3}},
		{"no final newline", "5\n2", 1, []int{4, 1}},
		{"gzip", string(gzipBytes(t, []byte("2\n3\n"))), 1, []int{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readSplitRows(strings.NewReader(tt.input), "s.txt", tt.col, 5)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("rows = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReadSplitRowsErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		col   int
		want  string
	}{
		{"malformed", "1\nx\n", 1, `s.txt:2:1: row id "x": expected an integer in [1, 5]`},
		{"negative", "-1\n", 1, `s.txt:1:1: row id "-1": expected an integer in [1, 5]`},
		{"float", "1.0\n", 1, `s.txt:1:1: row id "1.0": expected an integer in [1, 5]`},
		{"huge", "1 99999999999999999999999\n", 2, `s.txt:1:3: row id "99999999999999999999999": expected an integer in [1, 5]`},
		{"zero", "0\n", 1, `s.txt:1:1: row id 0 out of range [1, 5] (the data file's rows)`},
		{"beyond N", "2\n6\n", 1, `s.txt:2:1: row id 6 out of range [1, 5] (the data file's rows)`},
		{"column missing", "1 2\n3\n", 2, `s.txt:2:2: line has 1 columns, split column 2 requested`},
		{"blank line", "1\n\n", 1, `s.txt:2:1: line has 0 columns, split column 1 requested`},
		{"repeated", "1\n2\n1\n", 1, `s.txt:3:1: row id 1 listed twice (first on line 1)`},
		{"empty file", "", 1, `s.txt:1:1: empty split file, expected 1-based row ids`},
		{"truncated gzip", string(gzipBytes(t, []byte("1\n2\n3\n"))[:12]), 1, `s.txt:1:1: gzip: unexpected EOF (truncated file?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readSplitRows(strings.NewReader(tt.input), "s.txt", tt.col, 5)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want a *ParseError", err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n%s\nwant\n%s", err, tt.want)
			}
		})
	}
	if _, err := readSplitRows(strings.NewReader("1\n"), "s.txt", 0, 5); err == nil {
		t.Error("column 0: no error")
	}
}
