// Package scores reads and writes score files: the top-k labels and
// scores of every row, in the text format of the Extreme Classification
// Repository's programs or as a SciPy sparse matrix in an .npz file (as
// pyxclib's evaluation reads it), which xmc predict writes and xmc eval
// reads, and a readable listing of predictions for a person.
package scores

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"xmc/data"
	"xmc/model"
)

// Write writes rows in the standard XMC score format: a header line
// "N L", then one line per row of space-separated label:score pairs in rank
// order (score descending, ties by label ascending; rows not in that order
// are sorted on a copy), an empty line for a row without predictions. Scores
// are written in the shortest form that reads back to the same float32.
// Labels outside [0, L), duplicate labels in a row and NaN scores are errors.
func Write(w io.Writer, L int, rows [][]model.Scored) error {
	sw, err := NewWriter(w, len(rows), L)
	if err != nil {
		return err
	}
	if err := sw.Write(rows); err != nil {
		return err
	}
	return sw.Close()
}

// Writer writes a score file (see Write) a batch of rows at a
// time, so that predictions need not be held for every row at once.
type Writer struct {
	bw         *bufio.Writer
	n, L, rows int // rows expected, labels, rows written
	b          []byte
	sorted     []model.Scored
	labels     []int32   // scratch for model.DuplicateLabel
	matrix     *data.CSR // the rows so far, for an .npz file; nil for text
}

// NewWriter writes the header of a score file of n rows over L labels
// to w and returns the writer of its rows.
func NewWriter(w io.Writer, n, L int) (*Writer, error) {
	if L < 0 || n < 0 {
		return nil, fmt.Errorf("write scores: negative shape %d × %d", n, L)
	}
	sw := &Writer{bw: bufio.NewWriterSize(w, 1<<16), n: n, L: L, b: make([]byte, 0, 256)}
	sw.b = strconv.AppendInt(sw.b, int64(n), 10)
	sw.b = append(sw.b, ' ')
	sw.b = strconv.AppendInt(sw.b, int64(L), 10)
	sw.b = append(sw.b, '\n')
	if _, err := sw.bw.Write(sw.b); err != nil {
		return nil, fmt.Errorf("write scores: %w", err)
	}
	return sw, nil
}

// NewNPZWriter returns the writer of a score file of n rows over L labels
// in the .npz format of SciPy's sparse matrices: an n × L CSR matrix of
// scores, each row holding its top-k labels, which pyxclib's evaluation and
// scipy.sparse.load_npz read as is. The matrix is written by Close; until
// then its rows are held, 8 bytes a score.
func NewNPZWriter(w io.Writer, n, L int) (*Writer, error) {
	if L < 0 || n < 0 || n > math.MaxInt32 {
		return nil, fmt.Errorf("write scores: shape %d × %d out of range", n, L)
	}
	m := &data.CSR{Rows: n, Cols: L, Indptr: make([]int64, 1, n+1)}
	return &Writer{bw: bufio.NewWriterSize(w, 1<<16), n: n, L: L, matrix: m}, nil
}

// Write writes the next rows.
func (sw *Writer) Write(rows [][]model.Scored) error {
	if sw.rows+len(rows) > sw.n {
		return fmt.Errorf("write scores: %d rows written to a file of %d", sw.rows+len(rows), sw.n)
	}
	for _, row := range rows {
		i := sw.rows
		sw.rows++
		if !slices.IsSortedFunc(row, model.CompareRank) {
			sw.sorted = append(sw.sorted[:0], row...)
			model.SortScored(sw.sorted)
			row = sw.sorted
		}
		if l, ok := model.DuplicateLabel(row, &sw.labels); ok {
			return fmt.Errorf("write scores: row %d: label %d listed twice", i, l)
		}
		if sw.matrix != nil {
			if err := sw.appendRow(i, row); err != nil {
				return err
			}
			continue
		}
		b := sw.b[:0]
		for j, s := range row {
			if s.Label < 0 || int(s.Label) >= sw.L {
				return fmt.Errorf("write scores: row %d: label %d outside [0, %d)", i, s.Label, sw.L)
			}
			if math.IsNaN(float64(s.Score)) {
				return fmt.Errorf("write scores: row %d: label %d has a NaN score", i, s.Label)
			}
			if j > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendInt(b, int64(s.Label), 10)
			b = append(b, ':')
			b = strconv.AppendFloat(b, float64(s.Score), 'g', -1, 32)
		}
		b = append(b, '\n')
		if _, err := sw.bw.Write(b); err != nil {
			return fmt.Errorf("write scores: %w", err)
		}
		sw.b = b
	}
	return nil
}

// appendRow adds row i, in rank order, to the matrix of an .npz file,
// sorted by label as SciPy's canonical CSR matrices are.
func (sw *Writer) appendRow(i int, row []model.Scored) error {
	m := sw.matrix
	start := len(m.Indices)
	for _, s := range row {
		if s.Label < 0 || int(s.Label) >= sw.L {
			return fmt.Errorf("write scores: row %d: label %d outside [0, %d)", i, s.Label, sw.L)
		}
		if math.IsNaN(float64(s.Score)) || math.IsInf(float64(s.Score), 0) {
			return fmt.Errorf("write scores: row %d: label %d: score %v not finite, which an .npz score file does not hold", i, s.Label, s.Score)
		}
		m.Indices = append(m.Indices, s.Label)
		m.Values = append(m.Values, s.Score)
	}
	sort.Sort(byColumn{m.Indices[start:], m.Values[start:]})
	m.Indptr = append(m.Indptr, int64(len(m.Indices)))
	return nil
}

// byColumn sorts a row's entries by column.
type byColumn struct {
	idx []int32
	val []float32
}

func (r byColumn) Len() int           { return len(r.idx) }
func (r byColumn) Less(i, j int) bool { return r.idx[i] < r.idx[j] }
func (r byColumn) Swap(i, j int) {
	r.idx[i], r.idx[j] = r.idx[j], r.idx[i]
	r.val[i], r.val[j] = r.val[j], r.val[i]
}

// Close flushes the rows written, which must be as many as the header says.
func (sw *Writer) Close() error {
	if sw.rows != sw.n {
		return fmt.Errorf("write scores: %d rows written to a file of %d", sw.rows, sw.n)
	}
	if sw.matrix != nil {
		if err := data.WriteNPZ(sw.bw, sw.matrix, false); err != nil {
			return fmt.Errorf("write scores: %w", err)
		}
	}
	if err := sw.bw.Flush(); err != nil {
		return fmt.Errorf("write scores: %w", err)
	}
	return nil
}

// Read reads a score file in the standard XMC format (see
// [Write]), or a SciPy sparse matrix of scores in an .npz file (see
// [NewNPZWriter]), told apart by their first bytes. Pairs may come in any
// order, as in score matrices written by other XMC programs sorted by
// label; each returned row is in rank order. Errors are reported as
// file:line:column: a malformed header or pair, a label outside [0, L), a
// label listed twice in a row, a NaN score, or a number of rows different
// from the header's N; for .npz files as data.ReadMatrix reports them.
func Read(path string) (L int, rows [][]model.Scored, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, fmt.Errorf("read scores: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	if magic, _ := br.Peek(2); string(magic) == "PK" {
		return readNPZ(path)
	}
	return readScores(br, path)
}

// readNPZ reads the rows of the matrix of scores in the .npz file at path.
func readNPZ(path string) (L int, rows [][]model.Scored, err error) {
	m, err := data.ReadMatrix(path)
	if err != nil {
		return 0, nil, err
	}
	flat := make([]model.Scored, m.NNZ())
	rows = make([][]model.Scored, m.Rows)
	for i := range m.Rows {
		idx, val := m.Row(i)
		lo := m.Indptr[i]
		row := flat[lo : lo+int64(len(idx)) : lo+int64(len(idx))]
		for k, l := range idx {
			row[k] = model.Scored{Label: l, Score: val[k]}
		}
		model.SortScored(row)
		rows[i] = row
	}
	return m.Cols, rows, nil
}

// readScores parses a score file from r; name is used in errors.
func readScores(r io.Reader, name string) (L int, rows [][]model.Scored, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<30)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return 0, nil, fmt.Errorf("read scores %s: %w", name, err)
		}
		return 0, nil, fmt.Errorf("%s:1:1: empty file, expected header \"N L\"", name)
	}
	n, L, err := parseScoreHeader(sc.Bytes())
	if err != nil {
		return 0, nil, fmt.Errorf("%s:1:%w", name, err)
	}
	// All pairs go to one flat slice, rows are cut from it at the end: one
	// allocation pattern for millions of rows instead of one per row.
	var flat []model.Scored
	var labels []int32 // scratch for model.DuplicateLabel
	ends := make([]int, 0, min(n, 1<<16))
	line := 1
	for sc.Scan() {
		line++
		if len(ends) == n {
			return 0, nil, fmt.Errorf("%s:%d:1: more than the %d rows the header announces", name, line, n)
		}
		start := len(flat)
		flat, err = parseScoreRow(sc.Bytes(), L, flat)
		if err != nil {
			return 0, nil, fmt.Errorf("%s:%d:%w", name, line, err)
		}
		row := flat[start:]
		model.SortScored(row)
		if l, ok := model.DuplicateLabel(row, &labels); ok {
			return 0, nil, fmt.Errorf("%s:%d:1: label %d listed twice", name, line, l)
		}
		ends = append(ends, len(flat))
	}
	if err := sc.Err(); err != nil {
		return 0, nil, fmt.Errorf("read scores %s line %d: %w", name, line+1, err)
	}
	if len(ends) != n {
		return 0, nil, fmt.Errorf("%s:%d:1: file has %d rows, header announces %d", name, line+1, len(ends), n)
	}
	rows = make([][]model.Scored, n)
	start := 0
	for i, end := range ends {
		rows[i] = flat[start:end:end]
		start = end
	}
	return L, rows, nil
}

// parseScoreHeader parses "N L". Errors start with the column, to be
// prefixed by file and line.
func parseScoreHeader(b []byte) (n, L int, err error) {
	f := bytes.Fields(b)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("1: header %q: expected two numbers \"N L\"", b)
	}
	vals := [2]int{}
	for i, tok := range f {
		v, err := strconv.ParseInt(string(tok), 10, 32)
		if err != nil || v < 0 {
			col := bytes.Index(b, tok) + 1
			return 0, 0, fmt.Errorf("%d: header: %q is not a non-negative count", col, tok)
		}
		vals[i] = int(v)
	}
	return vals[0], vals[1], nil
}

// parseScoreRow appends the label:score pairs of one line to dst. Errors
// start with the 1-based column of the offending pair.
func parseScoreRow(b []byte, L int, dst []model.Scored) ([]model.Scored, error) {
	i := 0
	for {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
		if i == len(b) {
			return dst, nil
		}
		start := i
		for i < len(b) && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' {
			i++
		}
		tok := b[start:i]
		s, err := parsePair(tok, L)
		if err != nil {
			return dst, fmt.Errorf("%d: %w", start+1, err)
		}
		dst = append(dst, s)
	}
}

// parsePair parses one "label:score" token.
func parsePair(tok []byte, L int) (model.Scored, error) {
	colon := bytes.IndexByte(tok, ':')
	if colon <= 0 || colon == len(tok)-1 {
		return model.Scored{}, fmt.Errorf("malformed pair %q, expected label:score", tok)
	}
	label, err := strconv.ParseInt(string(tok[:colon]), 10, 32)
	if err != nil || label < 0 {
		return model.Scored{}, fmt.Errorf("malformed pair %q: label is not a non-negative integer", tok)
	}
	if int(label) >= L {
		return model.Scored{}, fmt.Errorf("pair %q: label %d >= L = %d", tok, label, L)
	}
	score, err := strconv.ParseFloat(string(tok[colon+1:]), 32)
	if err != nil && !isRangeErr(err) {
		return model.Scored{}, fmt.Errorf("malformed pair %q: score is not a number", tok)
	}
	if math.IsNaN(score) {
		return model.Scored{}, fmt.Errorf("pair %q: score is NaN", tok)
	}
	return model.Scored{Label: int32(label), Score: float32(score)}, nil
}

// isRangeErr reports whether err is strconv's out-of-range error: a score
// beyond float32's range, such as 1e39, reads as ±Inf, which still ranks.
func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// WriteReadable writes the first n rows of predictions for a person to
// read: each predicted label by name (see data.LabelNames) with its score,
// starred where truth, if not nil, holds it, after the row's true labels.
func WriteReadable(w io.Writer, rows [][]model.Scored, truth *data.CSR, names data.LabelNames, n int) error {
	bw := bufio.NewWriter(w)
	for i := range min(n, len(rows)) {
		fmt.Fprintf(bw, "row %d", i)
		var labels []int32
		if truth != nil && i < truth.Rows {
			labels, _ = truth.Row(i)
			parts := make([]string, len(labels))
			for q, l := range labels {
				parts[q] = names.Name(l)
			}
			fmt.Fprintf(bw, ", true labels: %s", strings.Join(parts, "; "))
			if len(labels) == 0 {
				fmt.Fprintf(bw, "none")
			}
		}
		fmt.Fprintln(bw)
		for rank, s := range rows[i] {
			hit := " "
			if _, ok := slices.BinarySearch(labels, s.Label); ok {
				hit = "*"
			}
			fmt.Fprintf(bw, "  %s %2d. %-10.4g %s\n", hit, rank+1, s.Score, names.Name(s.Label))
		}
	}
	return bw.Flush()
}
