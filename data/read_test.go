package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	bibtexTrain    = "../testdata/bibtex/train.txt"
	bibtexTest     = "../testdata/bibtex/test.txt"
	deliciousTrain = "../testdata/delicious/train.txt"
	deliciousTest  = "../testdata/delicious/test.txt"
	bibtexSplitDir = "../testdata/bibtex/split_format"
)

// rows builds a CSR from per-row column ids and values, for expectations.
func rows(cols int, idx [][]int32, val [][]float32) CSR {
	m := CSR{Rows: len(idx), Cols: cols, Indptr: []int64{0}}
	for i := range idx {
		m.Indices = append(m.Indices, idx[i]...)
		if val == nil {
			for range idx[i] {
				m.Values = append(m.Values, 1)
			}
		} else {
			m.Values = append(m.Values, val[i]...)
		}
		m.Indptr = append(m.Indptr, int64(len(m.Indices)))
	}
	return m
}

// edgeCases is a dataset of the values and rows a writer must keep
// exactly: empty rows, the smallest subnormal, the largest float32 and a
// small negative value.
func edgeCases() *Dataset {
	return &Dataset{
		X: rows(7, [][]int32{{}, {0, 3}, {}, {1}}, [][]float32{{}, {-1.5e-7, 3.4028235e38}, {}, {1e-45}}),
		Y: rows(9, [][]int32{{}, {}, {0, 4}, {2}}, nil),
	}
}

// csrEqual reports whether a and b hold the same matrix; nil and empty
// slices are equal.
func csrEqual(a, b *CSR) bool {
	return a.Rows == b.Rows && a.Cols == b.Cols &&
		slices.Equal(a.Indptr, b.Indptr) &&
		slices.Equal(a.Indices, b.Indices) &&
		slices.Equal(a.Values, b.Values)
}

func checkEqual(t *testing.T, got, want *Dataset) {
	t.Helper()
	if !csrEqual(&got.X, &want.X) {
		t.Errorf("X = %+v, want %+v", got.X, want.X)
	}
	if !csrEqual(&got.Y, &want.Y) {
		t.Errorf("Y = %+v, want %+v", got.Y, want.Y)
	}
}

// checkValid fails unless d satisfies the CSR invariants and label values are 1.
func checkValid(t testing.TB, d *Dataset) {
	t.Helper()
	if err := d.X.Validate(); err != nil {
		t.Fatalf("X: %v", err)
	}
	if err := d.Y.Validate(); err != nil {
		t.Fatalf("Y: %v", err)
	}
	if d.X.Rows != d.Y.Rows {
		t.Fatalf("X has %d rows, Y %d", d.X.Rows, d.Y.Rows)
	}
	for k, v := range d.Y.Values {
		if v != 1 {
			t.Fatalf("Y.Values[%d] = %v, want 1", k, v)
		}
	}
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadRealData(t *testing.T) {
	tests := []struct {
		path                string
		n, d, l             int
		nnz, positives      int64
		emptyLabelRows      int
		firstLabels         []int32 // nil: not checked
		firstFeaturesPrefix []int32
	}{
		{bibtexTrain, 4880, 1836, 159, 334250, 11616, 0, []int32{3, 23, 61, 63, 76}, []int32{0, 5, 6, 20, 33}},
		{bibtexTest, 2515, 1836, 159, 173496, 6146, 0, nil, nil},
		{deliciousTrain, 12920, 500, 983, 239549, 246088, 10, nil, nil},
		{deliciousTest, 3185, 500, 983, 55065, 60229, 4, nil, nil},
		{filepath.Join(bibtexSplitDir, "Bibtex_data.txt"), 7395, 1836, 159, 507746, 17762, 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			d, err := ReadFile(tt.path, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkValid(t, d)
			if d.N() != tt.n || d.D() != tt.d || d.L() != tt.l {
				t.Errorf("N, D, L = %d, %d, %d, want %d, %d, %d", d.N(), d.D(), d.L(), tt.n, tt.d, tt.l)
			}
			if d.X.NNZ() != tt.nnz || d.Y.NNZ() != tt.positives {
				t.Errorf("feature nnz %d, label positives %d, want %d, %d", d.X.NNZ(), d.Y.NNZ(), tt.nnz, tt.positives)
			}
			empty := 0
			for i := range d.N() {
				if l, _ := d.Y.Row(i); len(l) == 0 {
					empty++
				}
			}
			if empty != tt.emptyLabelRows {
				t.Errorf("%d rows without labels, want %d", empty, tt.emptyLabelRows)
			}
			if tt.firstLabels != nil {
				labels, _ := d.Y.Row(0)
				feats, vals := d.X.Row(0)
				if !slices.Equal(labels, tt.firstLabels) || !slices.Equal(feats[:len(tt.firstFeaturesPrefix)], tt.firstFeaturesPrefix) || vals[0] != 1 {
					t.Errorf("row 0: labels %v, features %v..., want %v, %v...", labels, feats[:5], tt.firstLabels, tt.firstFeaturesPrefix)
				}
			}
		})
	}
}

// TestWriteXMCRealRoundTrip checks that writing a real file back gives the
// very same bytes, empty-label rows included.
func TestWriteXMCRealRoundTrip(t *testing.T) {
	for _, path := range []string{bibtexTest, deliciousTrain} {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Read(bytes.NewReader(want), path, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := WriteXMC(&got, d); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: WriteXMC(Read) differs from the file", path)
		}
	}
}

func TestReadValid(t *testing.T) {
	tests := []struct {
		name  string
		opt   ReadOptions
		input string
		x, y  CSR
	}{
		{"unsorted ids are sorted", ReadOptions{}, "2 4 3\n2,0 3:0.5 1:2\n 0:1\n",
			rows(4, [][]int32{{1, 3}, {0}}, [][]float32{{2, 0.5}, {1}}),
			rows(3, [][]int32{{0, 2}, {}}, nil)},
		{"tabs, runs of spaces, CRLF, trailing space", ReadOptions{}, "1 4 3\r\n1\t0:1  2:1.5 \r\n",
			rows(4, [][]int32{{0, 2}}, [][]float32{{1, 1.5}}),
			rows(3, [][]int32{{1}}, nil)},
		{"row starting with a feature has no labels", ReadOptions{}, "1 4 3\n0:1 2:1\n",
			rows(4, [][]int32{{0, 2}}, [][]float32{{1, 1}}),
			rows(3, [][]int32{{}}, nil)},
		{"empty line is an empty row", ReadOptions{}, "2 4 3\n\n1 0:1\n",
			rows(4, [][]int32{{}, {0}}, [][]float32{{}, {1}}),
			rows(3, [][]int32{{}, {1}}, nil)},
		{"labels only, no final newline", ReadOptions{}, "2 4 3\n1,2\n0 3:7",
			rows(4, [][]int32{{}, {3}}, [][]float32{{}, {7}}),
			rows(3, [][]int32{{1, 2}, {0}}, nil)},
		{"value forms", ReadOptions{}, "1 9 1\n0 0:1e-3 1:-2.5 2:0 3:1234567 4:12345678 5:+1 6:0.1 7:3.4028235e38 8:007\n",
			rows(9, [][]int32{{0, 1, 2, 3, 4, 5, 6, 7, 8}}, [][]float32{{1e-3, -2.5, 0, 1234567, 12345678, 1, 0.1, 3.4028235e38, 7}}),
			rows(1, [][]int32{{0}}, nil)},
		{"N=0", ReadOptions{}, "0 4 3\n", rows(4, nil, nil), rows(3, nil, nil)},
		{"options widen D and L", ReadOptions{D: 10, L: 5}, "1 4 3\n2 3:1\n",
			rows(10, [][]int32{{3}}, [][]float32{{1}}),
			rows(5, [][]int32{{2}}, nil)},
		{"normalize", ReadOptions{Normalize: true}, "2 4 3\n0 0:3 3:4\n1 1:0\n",
			rows(4, [][]int32{{0, 3}, {1}}, [][]float32{{0.6, 0.8}, {0}}),
			rows(3, [][]int32{{0}, {1}}, nil)},
		{"libsvm infers D and L", ReadOptions{Format: FormatLIBSVM}, "1,0 4:0.5 1:1\n 2:1\n",
			rows(4, [][]int32{{0, 3}, {1}}, [][]float32{{1, 0.5}, {1}}),
			rows(2, [][]int32{{0, 1}, {}}, nil)},
		{"libsvm with D and L", ReadOptions{Format: FormatLIBSVM, D: 10, L: 5}, "4 1:1 10:2\n",
			rows(10, [][]int32{{0, 9}}, [][]float32{{1, 2}}),
			rows(5, [][]int32{{4}}, nil)},
		{"libsvm empty", ReadOptions{Format: FormatLIBSVM}, "", rows(0, nil, nil), rows(0, nil, nil)},
		{"gzip", ReadOptions{}, string(gzipBytes(t, []byte("1 4 3\n2 1:1\n"))),
			rows(4, [][]int32{{1}}, [][]float32{{1}}),
			rows(3, [][]int32{{2}}, nil)},
		{"gzip multistream", ReadOptions{}, string(gzipBytes(t, []byte("2 4 3\n2 1:1\n"))) + string(gzipBytes(t, []byte("0 0:1\n"))),
			rows(4, [][]int32{{1}, {0}}, [][]float32{{1}, {1}}),
			rows(3, [][]int32{{2}, {0}}, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Read(strings.NewReader(tt.input), "t.txt", tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkValid(t, d)
			checkEqual(t, d, &Dataset{X: tt.x, Y: tt.y})
		})
	}
}

// TestReadLongLine reads a row longer than the read buffer.
func TestReadLongLine(t *testing.T) {
	const d = 400000
	var b strings.Builder
	b.WriteString("1 400000 1\n0")
	for j := range d {
		b.WriteString(" ")
		b.WriteString(strconv.Itoa(j))
		b.WriteString(":1")
	}
	b.WriteString("\n")
	if b.Len() <= bufSize {
		t.Fatalf("line of %d bytes fits the %d-byte buffer", b.Len(), bufSize)
	}
	ds, err := Read(strings.NewReader(b.String()), "long.txt", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, ds)
	if ds.X.NNZ() != d {
		t.Errorf("nnz = %d, want %d", ds.X.NNZ(), d)
	}
}

func TestReadErrors(t *testing.T) {
	libsvm := ReadOptions{Format: FormatLIBSVM}
	tests := []struct {
		name  string
		opt   ReadOptions
		input string
		want  string
	}{
		{"empty file", ReadOptions{}, "", `t.txt:1:1: empty file, expected header "N D L"`},
		{"header too short", ReadOptions{}, "1 2\n0 1:1\n", `t.txt:1:4: header has 2 fields, expected 3: "N D L"`},
		{"header too long", ReadOptions{}, "1 2 3 4\n", `t.txt:1:7: header has extra field "4", expected "N D L"`},
		{"header not a number", ReadOptions{}, "1 x 3\n", `t.txt:1:3: header D: expected a non-negative integer, found "x"`},
		{"header negative", ReadOptions{}, "-1 2 3\n", `t.txt:1:1: header N: expected a non-negative integer, found "-1"`},
		{"header D beyond int32", ReadOptions{}, "1 2147483648 3\n", `t.txt:1:3: header D=2147483648 exceeds 2147483647 (ids are int32)`},
		{"header D above options", ReadOptions{D: 3}, "1 5 5\n0 1:1\n", `t.txt:1:1: header D=5 exceeds ReadOptions.D=3`},
		{"more rows than N", ReadOptions{}, "1 5 5\n0 1:1\n1 2:1\n", `t.txt:3:1: more rows than header N=1`},
		{"trailing blank line is a row", ReadOptions{}, "1 5 5\n0 1:1\n\n", `t.txt:3:1: more rows than header N=1`},
		{"fewer rows than N", ReadOptions{}, "3 5 5\n0 1:1\n1 2:1\n", `t.txt:4:1: end of file after 2 rows, header N=3`},
		{"feature id >= D", ReadOptions{}, "1 5 5\n0 1:1 5:1\n", `t.txt:2:7: feature id 5 >= D=5 (header)`},
		{"label id >= L", ReadOptions{}, "1 5 5\n0,5 1:1\n", `t.txt:2:3: label id 5 >= L=5 (header)`},
		{"negative feature id", ReadOptions{}, "1 5 5\n0 -1:1\n", `t.txt:2:3: negative feature id in "-1:1"`},
		{"negative first feature id", ReadOptions{}, "1 5 5\n-1:1\n", `t.txt:2:1: negative feature id in "-1:1"`},
		{"first feature id overflow", ReadOptions{}, "1 5 5\n99999999999:1\n", `t.txt:2:1: feature id in "99999999999:1" too large`},
		{"colon in second label", ReadOptions{}, "1 5 5\n3,4:1 1:1\n", `t.txt:2:3: malformed label id "4:1"`},
		{"negative label id", ReadOptions{}, "1 5 5\n-1 1:1\n", `t.txt:2:1: negative label id "-1"`},
		{"negative second label", ReadOptions{}, "1 5 5\n0,-1 1:1\n", `t.txt:2:3: negative label id "-1"`},
		{"duplicate feature", ReadOptions{}, "1 5 5\n0 1:1 1:2\n", `t.txt:2:7: duplicate feature id 1`},
		{"duplicate feature unsorted", ReadOptions{}, "1 5 5\n0 3:1 1:1 3:2\n", `t.txt:2:11: duplicate feature id 3 (also at column 3)`},
		{"duplicate label", ReadOptions{}, "1 5 5\n2,2 1:1\n", `t.txt:2:3: duplicate label id 2`},
		{"duplicate label unsorted", ReadOptions{}, "1 5 5\n3,1,3 1:1\n", `t.txt:2:5: duplicate label id 3 (also at column 1)`},
		{"NaN value", ReadOptions{}, "1 5 5\n0 1:nan\n", `t.txt:2:5: feature value "nan" is not finite`},
		{"Inf value", ReadOptions{}, "1 5 5\n0 1:-Inf\n", `t.txt:2:5: feature value "-Inf" is not finite`},
		{"value beyond float32", ReadOptions{}, "1 5 5\n0 1:1e39\n", `t.txt:2:5: feature value "1e39" out of float32 range`},
		{"malformed value", ReadOptions{}, "1 5 5\n0 1:1.5x\n", `t.txt:2:5: malformed feature value "1.5x"`},
		{"missing value", ReadOptions{}, "1 5 5\n0 1: 2:1\n", `t.txt:2:5: missing feature value after ':'`},
		{"feature without colon", ReadOptions{}, "1 5 5\n0 1:1 3\n", `t.txt:2:7: expected ':' after feature id in "3"`},
		{"feature id not a number", ReadOptions{}, "1 5 5\n0 a:1\n", `t.txt:2:3: expected feature id:value, found "a:1"`},
		{"feature id missing", ReadOptions{}, "1 5 5\n0 :1\n", `t.txt:2:3: expected feature id:value, found ":1"`},
		{"feature id overflow", ReadOptions{}, "1 5 5\n0 99999999999:1\n", `t.txt:2:3: feature id in "99999999999:1" too large`},
		{"label not a number", ReadOptions{}, "1 5 5\nx 1:1\n", `t.txt:2:1: expected label id, found "x"`},
		{"label with junk", ReadOptions{}, "1 5 5\n0x 1:1\n", `t.txt:2:1: malformed label id "0x"`},
		{"empty label", ReadOptions{}, "1 5 5\n0,,1 1:1\n", `t.txt:2:3: empty label id before ','`},
		{"trailing comma", ReadOptions{}, "1 5 5\n0, 1:1\n", `t.txt:2:3: expected label id after ','`},
		{"label overflow", ReadOptions{}, "1 5 5\n3000000000 1:1\n", `t.txt:2:1: label id "3000000000" too large`},
		{"libsvm feature id 0", libsvm, "0 0:1\n", `t.txt:1:3: feature id 0: LIBSVM feature ids start at 1`},
		{"libsvm feature id > D", ReadOptions{Format: FormatLIBSVM, D: 3}, "0 1:1\n0 4:1\n", `t.txt:2:3: feature id 4 > D=3 (ReadOptions; LIBSVM ids are 1-based)`},
		{"libsvm label id >= L", ReadOptions{Format: FormatLIBSVM, L: 2}, "2 1:1\n", `t.txt:1:1: label id 2 >= L=2 (ReadOptions)`},
		{"libsvm label id too large", libsvm, "2147483647 1:1\n", `t.txt:1:1: label id 2147483647 too large`},
		{"libsvm given an xmc file", libsvm, "2 5 3\n0 1:1\n", `t.txt:1:3: expected ':' after feature id in "5" (if line 1 is a header "N D L", the format is xmc, not libsvm)`},
		{"libsvm duplicate feature", libsvm, "0 2:1 1:1 2:1\n", `t.txt:1:11: duplicate feature id 2 (also at column 3)`},
		{"corrupt gzip header", ReadOptions{}, "\x1f\x8b\x00junkjunkjunk", `t.txt: gzip: invalid header`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Read(strings.NewReader(tt.input), "t.txt", tt.opt)
			if err == nil {
				t.Fatalf("no error, read %d rows", d.N())
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %q (%T) is not a *ParseError", err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n%s\nwant\n%s", err, tt.want)
			}
		})
	}
}

func TestReadOptionsErrors(t *testing.T) {
	for _, opt := range []ReadOptions{{D: -1}, {L: -1}, {D: 1 << 31}, {Format: 7}} {
		if _, err := Read(strings.NewReader("0 1 1\n"), "t.txt", opt); err == nil {
			t.Errorf("Read with %+v: no error", opt)
		}
	}
	if _, err := ReadFile("no/such/file.txt", ReadOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want os.ErrNotExist", err)
	}
}

// TestReadGzip reads gzip-compressed real data, then truncated and corrupted
// copies of it.
func TestReadGzip(t *testing.T) {
	plain, err := os.ReadFile(bibtexTrain)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Read(bytes.NewReader(plain), "plain", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gz := gzipBytes(t, plain)
	path := filepath.Join(t.TempDir(), "train.txt") // no .gz: detection is by content
	if err := os.WriteFile(path, gz, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, got, want)

	corrupt := slices.Clone(gz)
	corrupt[len(corrupt)/2] ^= 0xff
	trailer := slices.Clone(gz)
	trailer[len(trailer)-8] ^= 0xff // CRC-32 in the gzip trailer
	tests := []struct {
		name   string
		input  []byte
		prefix string
		is     error
	}{
		{"truncated", gz[:len(gz)/2], "train.txt.gz:", io.ErrUnexpectedEOF},
		{"corrupt data", corrupt, "train.txt.gz:", nil},
		{"bad checksum", trailer, "train.txt.gz:", gzip.ErrChecksum},
		{"trailing garbage", append(slices.Clone(gz), "junk"...), "train.txt.gz:", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.input), "train.txt.gz", ReadOptions{})
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want a *ParseError", err, err)
			}
			if !strings.HasPrefix(err.Error(), tt.prefix) || !strings.Contains(pe.Msg, "gzip") || pe.Line < 1 {
				t.Errorf("error %q: want %q prefix, a line and a gzip message", err, tt.prefix)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
		})
	}
}

// TestReadGzipGoroutines checks that the decompressing goroutine ends with
// every Read, successful or not.
func TestReadGzipGoroutines(t *testing.T) {
	good := gzipBytes(t, []byte("2 4 3\n2 1:1\n0 0:1\n"))
	bad := gzipBytes(t, []byte("2 4 3\n2 1:x\n0 0:1\n"))
	before := runtime.NumGoroutine()
	for range 10 {
		if _, err := Read(bytes.NewReader(good), "good", ReadOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(bytes.NewReader(bad), "bad", ReadOptions{}); err == nil {
			t.Fatal("bad input: no error")
		}
		if _, err := Read(bytes.NewReader(good[:len(good)-3]), "truncated", ReadOptions{}); err == nil {
			t.Fatal("truncated input: no error")
		}
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines before, %d after", before, n)
	}
}

func TestFormat(t *testing.T) {
	for _, f := range []Format{FormatXMC, FormatLIBSVM, FormatNPZ} {
		g, err := ParseFormat(strings.ToUpper(f.String()))
		if err != nil || g != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f.String(), g, err)
		}
		var h Format
		if err := h.Set(f.String()); err != nil || h != f {
			t.Errorf("Set(%q) gave %v, %v", f.String(), h, err)
		}
	}
	if _, err := ParseFormat("arff"); err == nil {
		t.Error("ParseFormat(arff): no error")
	}
	if s := Format(9).String(); s != "Format(9)" {
		t.Errorf("Format(9).String() = %q", s)
	}
}

func benchmarkRead(b *testing.B, path string, compress bool) {
	plain, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	input := plain
	if compress {
		input = gzipBytes(b, plain)
	}
	b.SetBytes(int64(len(plain))) // throughput in uncompressed text
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(input), path, ReadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadXMCDelicious(b *testing.B)     { benchmarkRead(b, deliciousTrain, false) }
func BenchmarkReadXMCDeliciousGzip(b *testing.B) { benchmarkRead(b, deliciousTrain, true) }
func BenchmarkReadXMCBibtex(b *testing.B)        { benchmarkRead(b, bibtexTrain, false) }
