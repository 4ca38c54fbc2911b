package data

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codeberg.org/sbinet/npyio/npy"
	"codeberg.org/sbinet/npyio/npz"
)

// writeFile writes b to a file named name in dir and returns its path.
func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// npzBytes returns the archive of the named arrays, written by npyio in
// the order given.
func npzBytes(t *testing.T, arrays ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := npz.NewWriter(&buf)
	for k := 0; k < len(arrays); k += 2 {
		if err := w.Write(arrays[k].(string), arrays[k+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// csrArrays returns the arrays of a SciPy CSR matrix with int32 indices
// and float32 values, with one of them replaced when replace names it.
func csrArrays(rows, cols int, indptr, indices []int32, values []float32, replace ...any) []any {
	arrays := map[string]any{"indices.npy": indices, "indptr.npy": indptr, "format.npy": "csr",
		"shape.npy": []int64{int64(rows), int64(cols)}, "data.npy": values}
	for k := 0; k < len(replace); k += 2 {
		if replace[k+1] == nil {
			delete(arrays, replace[k].(string))
		} else {
			arrays[replace[k].(string)] = replace[k+1]
		}
	}
	var list []any
	for _, name := range []string{"indices.npy", "indptr.npy", "format.npy", "shape.npy", "data.npy"} {
		if v, ok := arrays[name]; ok {
			list = append(list, name, v)
		}
	}
	return list
}

// TestNPZRoundTrip writes datasets as a pair of .npz files and reads them
// back exactly, with the labels file named by the naming rule.
func TestNPZRoundTrip(t *testing.T) {
	bib, err := ReadFile(bibtexTest, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edge := edgeCases()
	empty := &Dataset{X: rows(3, nil, nil), Y: rows(2, nil, nil)}
	for name, d := range map[string]*Dataset{"bibtex": bib, "edge cases": edge, "no rows": empty} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, m := range []struct {
				file string
				csr  *CSR
			}{{"X.trn.npz", &d.X}, {"Y.trn.npz", &d.Y}} {
				var buf bytes.Buffer
				if err := WriteNPZ(&buf, m.csr, name == "bibtex"); err != nil {
					t.Fatal(err)
				}
				writeFile(t, dir, m.file, buf.Bytes())
			}
			got, err := ReadFile(filepath.Join(dir, "X.trn.npz"), ReadOptions{Format: FormatNPZ})
			if err != nil {
				t.Fatal(err)
			}
			checkEqual(t, got, d)
		})
	}
}

// TestReadMatrixKinds reads matrices with the dtypes and layouts SciPy and
// NumPy write, including the files a Python script made (testdata).
func TestReadMatrixKinds(t *testing.T) {
	want := rows(5, [][]int32{{0, 3}, {1, 4}, {}, {2}}, [][]float32{{0.5, 1.25}, {-1.5, 2}, {}, {3}})
	tests := []struct {
		name string
		file []byte // nil: read path from testdata
		path string
		want CSR
	}{
		{name: "scipy-made csr, float64 values, unsorted row", path: "testdata/X.small.npz", want: want},
		{name: "scipy-made labels", path: "testdata/Y.small.npz", want: rows(3, [][]int32{{1}, {0, 2}, {2}, {}}, nil)},
		{name: "numpy-made dense, Fortran order", path: "testdata/dense.npy", want: want},
		{name: "int64 indices and pointers, int values", file: npzBytes(t,
			"indices.npy", []int64{2, 0}, "indptr.npy", []int64{0, 1, 2}, "format.npy", "csr",
			"shape.npy", []int64{2, 3}, "data.npy", []int64{7, -2}),
			want: rows(3, [][]int32{{2}, {0}}, [][]float32{{7}, {-2}})},
		{name: "uint8 indices, bool values, members in another order", file: npzBytes(t,
			"shape.npy", []int32{1, 4}, "data.npy", []bool{true, false}, "format.npy", "csr",
			"indptr.npy", []uint8{0, 2}, "indices.npy", []uint8{3, 1}),
			want: rows(4, [][]int32{{1, 3}}, [][]float32{{0, 1}})},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if tt.file != nil {
				path = writeFile(t, dir, "m.npz", tt.file)
			}
			got, err := ReadMatrix(path)
			if err != nil {
				t.Fatal(err)
			}
			if !csrEqual(got, &tt.want) {
				t.Errorf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

// TestReadNumPyPython reads the features and labels a Python script wrote
// as one dataset.
func TestReadNumPyPython(t *testing.T) {
	d, err := ReadFile("testdata/X.small.npz", ReadOptions{Format: FormatNPZ, D: 8})
	if err != nil {
		t.Fatal(err)
	}
	if d.N() != 4 || d.D() != 8 || d.L() != 3 || d.Y.NNZ() != 4 {
		t.Errorf("N=%d D=%d L=%d labels=%d, want 4, 8 (widened), 3, 4", d.N(), d.D(), d.L(), d.Y.NNZ())
	}
	dense, err := ReadFile("testdata/dense.npy", ReadOptions{Format: FormatNPZ, Labels: "testdata/Y.small.npz"})
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := ReadFile("testdata/X.small.npz", ReadOptions{Format: FormatNPZ})
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, dense, sparse)
	alone, err := ReadFile("testdata/X.small.npz", ReadOptions{Format: FormatNPZ, Labels: NoLabels})
	if err != nil {
		t.Fatal(err)
	}
	if alone.L() != 0 || alone.Y.Rows != 4 || alone.Y.NNZ() != 0 {
		t.Errorf("features alone: Y %d × %d with %d entries, want 4 × 0, none", alone.Y.Rows, alone.Y.Cols, alone.Y.NNZ())
	}
}

// TestReadNumPyErrors feeds bad files and checks that each error names the
// file and what is wrong.
func TestReadNumPyErrors(t *testing.T) {
	good := npzBytes(t, csrArrays(2, 3, []int32{0, 1, 2}, []int32{0, 2}, []float32{1, 2})...)
	bad := func(replace ...any) []byte {
		return npzBytes(t, csrArrays(2, 3, []int32{0, 1, 2}, []int32{0, 2}, []float32{1, 2}, replace...)...)
	}
	// A member whose stored bytes disagree with its CRC.
	var corrupt bytes.Buffer
	zw := zip.NewWriter(&corrupt)
	for _, name := range []string{"indices.npy", "indptr.npy", "format.npy", "shape.npy", "data.npy"} {
		r, _ := zip.NewReader(bytes.NewReader(good), int64(len(good)))
		f, _ := r.Open(name)
		var b bytes.Buffer
		b.ReadFrom(f)
		raw := b.Bytes()
		h := &zip.FileHeader{Name: name, Method: zip.Store, CRC32: crc32.ChecksumIEEE(raw), UncompressedSize64: uint64(len(raw)), CompressedSize64: uint64(len(raw))}
		if name == "data.npy" {
			raw[len(raw)-1] ^= 0xff
		}
		w, _ := zw.CreateRaw(h)
		w.Write(raw)
	}
	zw.Close()
	// A format.npy whose version 2 preamble announces a header of 1 MB.
	var longFormat bytes.Buffer
	zw = zip.NewWriter(&longFormat)
	r, _ := zip.NewReader(bytes.NewReader(good), int64(len(good)))
	for _, f := range r.File {
		w, _ := zw.Create(f.Name)
		if f.Name == "format.npy" {
			w.Write([]byte("\x93NUMPY\x02\x00\x00\x00\x10\x00{'descr': '<U3'"))
			continue
		}
		rc, _ := f.Open()
		io.Copy(w, rc)
		rc.Close()
	}
	zw.Close()
	tests := []struct {
		name   string
		file   []byte
		labels []byte // nil: good labels of 2 rows
		want   string
	}{
		{"truncated", good[:len(good)/2], nil, "not a readable .npz"},
		{"empty file", []byte{}, nil, "neither a NumPy .npz archive nor a .npy array"},
		{"text file", []byte("2 3 2\n0 0:1\n"), nil, "neither a NumPy .npz archive nor a .npy array"},
		{"checksum", corrupt.Bytes(), nil, "data.npy: read: zip: checksum error"},
		{"float indices", bad("indices.npy", []float64{0, 2}), nil, "indices.npy: dtype <f8, want integers"},
		{"string values", bad("data.npy", "ab"), nil, "data.npy: dtype <U2, want numbers"},
		{"column out of range", bad("indices.npy", []int32{0, 3}), nil, "indices.npy: row 1: column 3 outside [0, 3)"},
		{"negative column", bad("indices.npy", []int64{-1, 0}), nil, "indices.npy: row 0: column -1 outside [0, 3)"},
		{"column beyond int32", bad("indices.npy", []int64{0, 1 << 40}), nil, "indices.npy: element 1 is 1099511627776, out of the range of int32"},
		{"repeated column", bad("indptr.npy", []int32{0, 2, 2}, "indices.npy", []int32{1, 1}), nil, "row 0: column 1 stored twice"},
		{"pointers past the end", bad("indptr.npy", []int32{0, 1, 3}), nil, "indptr.npy runs from 0 to 3, want 0 to 2"},
		{"pointers decreasing", bad("indptr.npy", []int32{0, 2, 1}, "indices.npy", []int32{0}, "data.npy", []float32{1}), nil, "row 1 ends at 1 before it starts at 2"},
		{"pointers for other rows", bad("indptr.npy", []int32{0, 2}), nil, "indptr.npy: 2 row pointers for 2 rows, want 3"},
		{"values and indices differ", bad("data.npy", []float32{1}), nil, "indices.npy has 2 elements, data.npy 1"},
		{"NaN value", bad("data.npy", []float64{1, math.NaN()}), nil, "data.npy: element 1 is NaN, want a finite float32"},
		{"float64 overflow", bad("data.npy", []float64{1, 1e300}), nil, "data.npy: element 1 is +Inf, want a finite float32"},
		{"CSC matrix", bad("format.npy", "csc"), nil, `a SciPy "csc" matrix: xmc reads CSR matrices`},
		{"no format", bad("format.npy", nil), nil, `no array "format": not a SciPy sparse matrix`},
		{"format header too long", longFormat.Bytes(), nil, "format.npy: a NumPy header of 1048576 bytes, want at most 10000"},
		{"no data", bad("data.npy", nil), nil, `no array "data"`},
		{"bad shape", bad("shape.npy", []int64{2}), nil, "shape.npy: shape [1], want 2 elements"},
		{"negative shape", bad("shape.npy", []int64{-2, 3}), nil, "matrix shape -2 × 3 out of range"},
		{"labels of other rows", good, npzBytes(t, csrArrays(3, 2, []int32{0, 0, 0, 1}, []int32{1}, []float32{1})...),
			"3 rows of labels for the 2 rows of features"},
		{"bad labels", good, good[:20], "Y.bad.npz: not a readable .npz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, "X.bad.npz", tt.file)
			labels := tt.labels
			if labels == nil {
				labels = npzBytes(t, csrArrays(2, 2, []int32{0, 1, 1}, []int32{1}, []float32{1})...)
			}
			writeFile(t, dir, "Y.bad.npz", labels)
			_, err := ReadFile(path, ReadOptions{Format: FormatNPZ})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), ".bad.npz") {
				t.Errorf("error %q, want the file and %q", err, tt.want)
			}
		})
	}
}

// TestReadDenseErrors checks the shape and size checks of .npy files.
func TestReadDenseErrors(t *testing.T) {
	dense, err := os.ReadFile("testdata/dense.npy")
	if err != nil {
		t.Fatal(err)
	}
	var oneD bytes.Buffer
	if err := npy.Write(&oneD, []float32{1, 2}); err != nil {
		t.Fatal(err)
	}
	// A version 2 preamble announcing a header of 1 MB, which npyio would
	// parse in quadratic time.
	long := append([]byte("\x93NUMPY\x02\x00\x00\x00\x10\x00"), bytes.Repeat([]byte{' '}, 1<<20)...)
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"truncated", dense[:len(dense)-3], "shape [4 5] of 4-byte items needs 80 bytes, the file holds 77"},
		{"trailing bytes", append(append([]byte{}, dense...), 0), "the file holds 81"},
		{"1-D", oneD.Bytes(), "shape [2], want a 2-D array"},
		{"header cut", dense[:9], "not a NumPy array"},
		{"header too long", long, "a NumPy header of 1048576 bytes, want at most 10000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "X.npy", tt.file)
			_, err := ReadMatrix(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "X.npy") {
				t.Errorf("error %v, want the file and %q", err, tt.want)
			}
		})
	}
}

func TestLabelsPath(t *testing.T) {
	tests := []struct{ features, want string }{
		{"X.trn.npz", "Y.trn.npz"},
		{"data/eurlex/X.tst.npz", "data/eurlex/Y.tst.npz"},
		{"trn_X_Xf.npz", "trn_X_Y.npz"},
		{"/d/train-features.npz", "/d/train-labels.npz"},
		{"X_dir/X.npz", "X_dir/Y.npz"},
		{"tfidf.X.npy", "tfidf.Y.npy"},
		{"XX.npz", ""},
		{"X.X.npz", ""},
		{"train.npz", ""},
	}
	for _, tt := range tests {
		got, err := LabelsPath(tt.features)
		if tt.want == "" {
			if err == nil {
				t.Errorf("LabelsPath(%q) = %q, want an error", tt.features, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("LabelsPath(%q) = %q, %v, want %q", tt.features, got, err, tt.want)
		}
	}
}

// BenchmarkReadFile reads the same datasets from text and from .npz files,
// for the ratio of the two in one run.
func BenchmarkReadFile(b *testing.B) {
	tfidf, err := GenerateDataset(GenConfig{N: 20000, D: 50000, L: 2000, AvgLabels: 3, AvgFeatures: 100, LabelExponent: 1, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	NormalizeRows(&tfidf.X)
	sets := []struct {
		name string
		d    *Dataset
	}{{"bibtex", nil}, {"delicious", nil}, {"tfidf-20k", tfidf}}
	for _, set := range sets {
		dir := b.TempDir()
		d := set.d
		if d == nil {
			if d, err = ReadFile(map[string]string{"bibtex": bibtexTrain, "delicious": deliciousTrain}[set.name], ReadOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		var text, gz bytes.Buffer
		if err := WriteXMC(&text, d); err != nil {
			b.Fatal(err)
		}
		zw := gzip.NewWriter(&gz)
		zw.Write(text.Bytes())
		zw.Close()
		files := map[string]string{"xmc": writeFile(b, dir, "train.txt", text.Bytes()), "xmc.gz": writeFile(b, dir, "train.txt.gz", gz.Bytes())}
		for _, compress := range []bool{false, true} {
			var x, y bytes.Buffer
			if err := WriteNPZ(&x, &d.X, compress); err != nil {
				b.Fatal(err)
			}
			if err := WriteNPZ(&y, &d.Y, compress); err != nil {
				b.Fatal(err)
			}
			name := map[bool]string{false: "npz", true: "npz.deflated"}[compress]
			files[name] = writeFile(b, dir, "X."+name, x.Bytes())
			writeFile(b, dir, "Y."+name, y.Bytes())
		}
		for _, name := range []string{"xmc", "xmc.gz", "npz", "npz.deflated"} {
			format := map[bool]Format{false: FormatXMC, true: FormatNPZ}[strings.HasPrefix(name, "npz")]
			b.Run(set.name+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(text.Len())) // throughput in text, for all
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ReadFile(files[name], ReadOptions{Format: format}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
