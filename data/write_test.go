package data

import (
	"bytes"
	"errors"
	"testing"
)

// TestWriteRoundTrip writes datasets with real-valued features, empty rows
// and trailing empty columns, and reads them back exactly.
func TestWriteRoundTrip(t *testing.T) {
	gen, err := GenerateDataset(GenConfig{N: 300, D: 200, L: 50, AvgLabels: 2, AvgFeatures: 10, LabelExponent: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	NormalizeRows(&gen.X) // values like 0.35355338
	bib, err := ReadFile(bibtexTest, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edge := edgeCases()
	datasets := map[string]*Dataset{"generated": gen, "bibtex": bib, "edge cases": edge}
	formats := []struct {
		format Format
		write  func(*bytes.Buffer, *Dataset) error
	}{
		{FormatXMC, func(b *bytes.Buffer, d *Dataset) error { return WriteXMC(b, d) }},
		{FormatLIBSVM, func(b *bytes.Buffer, d *Dataset) error { return WriteLIBSVM(b, d) }},
	}
	for name, d := range datasets {
		for _, f := range formats {
			t.Run(name+"/"+f.format.String(), func(t *testing.T) {
				var buf bytes.Buffer
				if err := f.write(&buf, d); err != nil {
					t.Fatal(err)
				}
				got, err := Read(&buf, name, ReadOptions{Format: f.format, D: d.D(), L: d.L()})
				if err != nil {
					t.Fatal(err)
				}
				checkEqual(t, got, d)
			})
		}
	}
}

func TestWriteXMCText(t *testing.T) {
	d := &Dataset{
		X: rows(4, [][]int32{{0, 3}, {1}, {}}, [][]float32{{1, 0.25}, {2}, {}}),
		Y: rows(3, [][]int32{{0, 2}, {}, {}}, nil),
	}
	const want = "3 4 3\n0,2 0:1 3:0.25\n 1:2\n\n"
	var buf bytes.Buffer
	if err := WriteXMC(&buf, d); err != nil {
		t.Fatal(err)
	}
	if buf.String() != want {
		t.Errorf("WriteXMC wrote %q, want %q", buf.String(), want)
	}
	buf.Reset()
	if err := WriteLIBSVM(&buf, d); err != nil {
		t.Fatal(err)
	}
	if want := "0,2 1:1 4:0.25\n 2:2\n\n"; buf.String() != want {
		t.Errorf("WriteLIBSVM wrote %q, want %q", buf.String(), want)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrors(t *testing.T) {
	d := &Dataset{X: rows(2, [][]int32{{0}}, nil), Y: rows(2, [][]int32{{0}, {1}}, nil)}
	if err := WriteXMC(&bytes.Buffer{}, d); err == nil {
		t.Error("X and Y with different row counts: no error")
	}
	d.Y = rows(2, [][]int32{{1}}, nil)
	if err := WriteXMC(failWriter{}, d); err == nil {
		t.Error("failing writer: no error")
	}
}
