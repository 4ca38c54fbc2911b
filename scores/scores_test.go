package scores

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"xmc/data"
	"xmc/model"
)

func TestWrite(t *testing.T) {
	rows := [][]model.Scored{
		{{Label: 3, Score: 0.5}, {Label: 1, Score: 0.75}, {Label: 0, Score: 0.5}}, // written in rank order
		{},
		{{Label: 2, Score: -1.25}, {Label: 4, Score: 1e-20}},
	}
	var b bytes.Buffer
	if err := Write(&b, 5, rows); err != nil {
		t.Fatal(err)
	}
	want := "3 5\n1:0.75 0:0.5 3:0.5\n\n4:1e-20 2:-1.25\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	if rows[0][0].Label != 3 {
		t.Error("Write reordered the caller's row")
	}

	errs := []struct {
		name string
		rows [][]model.Scored
		want string
	}{
		{"label too large", [][]model.Scored{{{Label: 5, Score: 1}}}, "row 0: label 5 outside [0, 5)"},
		{"negative label", [][]model.Scored{{}, {{Label: -1, Score: 1}}}, "row 1: label -1 outside"},
		{"NaN", [][]model.Scored{{{Label: 1, Score: float32(math.NaN())}}}, "NaN"},
		{"duplicate", [][]model.Scored{{{Label: 1, Score: 1}, {Label: 2, Score: 0.5}, {Label: 1, Score: 0.2}}}, "label 1 listed twice"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			err := Write(&bytes.Buffer{}, 5, tt.rows)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestScoresRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const L = 1000
	rows := make([][]model.Scored, 300)
	for i := range rows {
		for _, l := range rng.Perm(L)[:rng.IntN(15)] {
			// Extreme and tied values must read back bit for bit.
			var s float32
			switch rng.IntN(5) {
			case 0:
				s = 1
			case 1:
				s = math.SmallestNonzeroFloat32
			case 2:
				s = -math.MaxFloat32
			default:
				s = rng.Float32()
			}
			rows[i] = append(rows[i], model.Scored{Label: int32(l), Score: s})
		}
		model.SortScored(rows[i])
	}
	infinite := []model.Scored{{Label: 0, Score: float32(math.Inf(1))}, {Label: 1, Score: float32(math.Inf(-1))}}
	for _, format := range []struct {
		name      string
		newWriter func(w io.Writer, n, L int) (*Writer, error)
		rows      [][]model.Scored
	}{
		{"scores.txt", NewWriter, append(slices.Clone(rows), infinite)}, // ±Inf ranks, in text
		{"scores.npz", NewNPZWriter, rows},
	} {
		t.Run(format.name, func(t *testing.T) {
			rows := format.rows
			path := filepath.Join(t.TempDir(), format.name)
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			w, err := format.newWriter(f, len(rows), L)
			if err != nil {
				t.Fatal(err)
			}
			for lo := 0; lo < len(rows); lo += 100 {
				if err := w.Write(rows[lo:min(lo+100, len(rows))]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			gotL, got, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if gotL != L || len(got) != len(rows) {
				t.Fatalf("L=%d, %d rows; want %d, %d", gotL, len(got), L, len(rows))
			}
			for i := range rows {
				if !slices.Equal(got[i], rows[i]) {
					t.Fatalf("row %d: got %v, want %v", i, got[i], rows[i])
				}
			}
			// Appending to a row must not clobber the next one.
			got[0] = append(got[0], model.Scored{Label: 999, Score: 0})
			if !slices.Equal(got[1], rows[1]) {
				t.Error("rows share backing storage beyond their length")
			}
		})
	}
	if err := writeNPZRow(infinite); err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Errorf("an infinite score in an .npz: error %v, want one saying it is not finite", err)
	}
}

// writeNPZRow writes one row to an .npz score file, for its errors.
func writeNPZRow(row []model.Scored) error {
	w, err := NewNPZWriter(io.Discard, 1, 5)
	if err != nil {
		return err
	}
	return w.Write([][]model.Scored{row})
}

func TestRead(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  [][]model.Scored // nil when an error is expected
		err   string
	}{
		{"label order is ranked", "1 4\n0:0.1 1:0.9 3:0.5\n", [][]model.Scored{{{Label: 1, Score: 0.9}, {Label: 3, Score: 0.5}, {Label: 0, Score: 0.1}}}, ""},
		{"empty rows", "3 2\n\n1:1\n\n", [][]model.Scored{{}, {{Label: 1, Score: 1}}, {}}, ""},
		{"no final newline", "2 2\n0:1\n1:1", [][]model.Scored{{{Label: 0, Score: 1}}, {{Label: 1, Score: 1}}}, ""},
		{"extra blanks", "1 3\n 2:1   0:2 \n", [][]model.Scored{{{Label: 0, Score: 2}, {Label: 2, Score: 1}}}, ""},
		{"zero rows", "0 7\n", [][]model.Scored{}, ""},
		{"empty file", "", nil, "s.txt:1:1: empty file"},
		{"bad header", "3\n", nil, "s.txt:1:1: header \"3\""},
		{"header not a number", "3 x\n", nil, "s.txt:1:3: header: \"x\""},
		{"no colon", "1 5\n1:0.5 2\n", nil, "s.txt:2:7: malformed pair \"2\""},
		{"empty score", "1 5\n1:\n", nil, "s.txt:2:1: malformed pair \"1:\""},
		{"bad label", "1 5\n1:1 a:1\n", nil, "s.txt:2:5: malformed pair \"a:1\": label"},
		{"negative label", "1 5\n-1:1\n", nil, "s.txt:2:1: malformed pair \"-1:1\": label"},
		{"label >= L", "2 5\n\n0:1 5:0.5\n", nil, "s.txt:3:5: pair \"5:0.5\": label 5 >= L = 5"},
		{"bad score", "1 5\n0:1e\n", nil, "s.txt:2:1: malformed pair \"0:1e\": score"},
		{"NaN", "1 5\n0:1 2:NaN\n", nil, "s.txt:2:5: pair \"2:NaN\": score is NaN"},
		{"duplicate", "1 5\n0:1 2:3 0:2\n", nil, "s.txt:2:1: label 0 listed twice"},
		{"too few rows", "3 5\n0:1\n", nil, "s.txt:3:1: file has 1 rows, header announces 3"},
		{"too many rows", "1 5\n0:1\n\n", nil, "s.txt:3:1: more than the 1 rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.txt")
			if err := os.WriteFile(path, []byte(tt.input), 0o644); err != nil {
				t.Fatal(err)
			}
			_, got, err := Read(path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d rows, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if !slices.Equal(got[i], tt.want[i]) {
					t.Errorf("row %d: got %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
	if _, _, err := Read(filepath.Join(t.TempDir(), "missing.txt")); err == nil {
		t.Error("missing file: no error")
	}
}

// FuzzRead checks that no input panics and that whatever reads
// successfully writes back and reads again to the same rows.
func FuzzRead(f *testing.F) {
	f.Add("2 5\n0:1 3:0.5\n\n")
	f.Add("1 3\n2:1e39 1:-0 0:4\n")
	f.Add("1 2\n0:1 0:1\n")
	f.Fuzz(func(t *testing.T, input string) {
		L, rows, err := readScores(strings.NewReader(input), "fuzz")
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := Write(&b, L, rows); err != nil {
			t.Fatalf("rows read from %q do not write: %v", input, err)
		}
		L2, rows2, err := readScores(&b, "fuzz")
		if err != nil || L2 != L || len(rows2) != len(rows) {
			t.Fatalf("rewrite of %q: L %d→%d, %d→%d rows, err %v", input, L, L2, len(rows), len(rows2), err)
		}
		for i := range rows {
			if !slices.Equal(rows[i], rows2[i]) {
				t.Fatalf("rewrite of %q: row %d %v became %v", input, i, rows[i], rows2[i])
			}
		}
	})
}

// TestWriteReadable checks the listing a person reads: names, scores, the
// true labels, and a star on each hit.
func TestWriteReadable(t *testing.T) {
	truth := data.CSR{Rows: 2, Cols: 3, Indptr: []int64{0, 2, 2}, Indices: []int32{0, 2}, Values: []float32{1, 1}}
	rows := [][]model.Scored{{{Label: 2, Score: 0.9}, {Label: 1, Score: 0.5}}, {{Label: 1, Score: 0.25}}, {{Label: 0, Score: 1}}}
	var b strings.Builder
	if err := WriteReadable(&b, rows, &truth, data.LabelNames{"cat", "dog", ""}, 2); err != nil {
		t.Fatal(err)
	}
	want := "row 0, true labels: cat; 2\n  *  1. 0.9        2\n     2. 0.5        dog\nrow 1, true labels: none\n     1. 0.25       dog\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
