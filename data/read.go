package data

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Format selects the text format of a dataset file.
type Format int

const (
	// FormatXMC is the Extreme Classification Repository text format: a
	// header line "N D L", then one line per instance "l1,l2,... f:v f:v ..."
	// with 0-based label and feature ids. The data file of the DXML split
	// format uses it too.
	FormatXMC Format = iota
	// FormatLIBSVM is the LIBSVM multi-label format: no header, one line per
	// instance "l1,l2,... f:v ...", with 0-based label ids and 1-based
	// feature ids.
	FormatLIBSVM
	// FormatNPZ is the NumPy files of Python's XMC tools: the features and
	// the labels as two matrices in files of their own, each a SciPy
	// sparse CSR matrix (.npz, scipy.sparse.save_npz) or a dense 2-D
	// array (.npy). See ReadMatrix and LabelsPath.
	FormatNPZ
)

// String returns the name that ParseFormat accepts.
func (f Format) String() string {
	switch f {
	case FormatXMC:
		return "xmc"
	case FormatLIBSVM:
		return "libsvm"
	case FormatNPZ:
		return "npz"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// ParseFormat returns the Format named s ("xmc", "libsvm" or "npz", any
// case), for command-line flags and configuration files.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "xmc":
		return FormatXMC, nil
	case "libsvm":
		return FormatLIBSVM, nil
	case "npz":
		return FormatNPZ, nil
	}
	return 0, fmt.Errorf("unknown data format %q (want xmc, libsvm or npz)", s)
}

// Set parses s with ParseFormat, so that *Format satisfies flag.Value.
func (f *Format) Set(s string) error {
	v, err := ParseFormat(s)
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// ReadOptions controls how a dataset file is read. The zero value reads the
// XMC format with the dimensions from its header.
type ReadOptions struct {
	Format Format
	// D and L are the numbers of feature and label columns. Zero takes them
	// from the header (XMC) or infers them as the largest id + 1 (LIBSVM).
	// For LIBSVM a non-zero value bounds the ids. For XMC the ids are always
	// checked against the header, and a non-zero value may only widen the
	// matrix, for example to give a test set the training set's D.
	D, L int
	// Normalize scales every feature row to unit L2 norm (see NormalizeRows).
	Normalize bool
	// Labels is the file of the label matrix, for FormatNPZ, whose
	// features and labels are apart: empty names it after the features'
	// file (see LabelsPath), NoLabels reads the features alone.
	Labels string
}

// NoLabels as ReadOptions.Labels reads the features of a FormatNPZ
// dataset alone, for prediction: its label matrix has no columns.
const NoLabels = "none"

// maxDim bounds D and L: ids are stored as int32.
const maxDim = math.MaxInt32

// ReadFile reads the dataset at path; see Read, and ReadNumPy for
// FormatNPZ.
func ReadFile(path string, opt ReadOptions) (*Dataset, error) {
	if opt.Format == FormatNPZ {
		return ReadNumPy(path, opt)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read dataset: %w", err)
	}
	defer f.Close()
	return Read(f, path, opt)
}

// Read parses a dataset in the format opt.Format from r, streaming it line by
// line. Input compressed with gzip is detected by its magic bytes and
// decompressed on the fly. name is used in error messages. Feature and label
// ids in a row may come in any order: they are sorted, and a repeated id is
// an error, as is any malformed or out-of-range token, a non-finite value or,
// for XMC, a row count that disagrees with the header. Such errors are
// *ParseError values locating the problem.
//
// Rows may use tabs or runs of spaces between tokens, and CRLF line ends. A
// row without labels starts with a space, or directly with a feature token
// "f:v"; an empty line is a row without labels and features.
func Read(r io.Reader, name string, opt ReadOptions) (*Dataset, error) {
	if opt.Format != FormatXMC && opt.Format != FormatLIBSVM {
		return nil, fmt.Errorf("read %s: format %v is not a text format", name, opt.Format)
	}
	if opt.D < 0 || opt.D > maxDim || opt.L < 0 || opt.L > maxDim {
		return nil, fmt.Errorf("read %s: options D=%d L=%d out of range [0, %d]", name, opt.D, opt.L, maxDim)
	}
	lines, err := openText(r, name)
	if err != nil {
		return nil, err
	}
	defer lines.close()
	p := &parser{name: name, opt: opt, lines: lines}
	d, err := p.parse()
	if err != nil {
		return nil, p.blameGzip(err)
	}
	if opt.Normalize {
		NormalizeRows(&d.X)
	}
	return d, nil
}

// parser turns the lines of an XMC or LIBSVM text into a Dataset.
type parser struct {
	name  string
	opt   ReadOptions
	lines *lineReader

	// header is the XMC header "N D L"; hasHeader is false for LIBSVM.
	hasHeader  bool
	n, hd, hl  int
	featBase   int64 // 0 for XMC feature ids, 1 for LIBSVM
	xLim, yLim int64 // stored ids must be < these
	xAuto      bool  // D inferred: xLim is maxDim, not a declared size
	yAuto      bool  // L inferred
	xMax, yMax int32 // largest stored ids seen, -1 if none

	// The matrices grow in chunks and are joined once at the end; the
	// current row is staged in small buffers first, to be sorted and checked.
	xIdx       chunks[int32]
	xVal       chunks[float32]
	yIdx       chunks[int32]
	xPtr, yPtr []int64
	feat, lab  rowBuf
}

// rowBuf stages the ids and values (features only) of the row being parsed.
type rowBuf struct {
	idx []int32
	val []float32
}

func (r *rowBuf) reset() {
	r.idx, r.val = r.idx[:0], r.val[:0]
}

// blameGzip returns err, unless the input is gzip-compressed and corrupt
// further on: corrupt deflate data often decodes to garbage text, and the
// gzip checksum at the end of the stream is the real diagnosis.
func (p *parser) blameGzip(err error) error {
	var pe *ParseError
	if p.lines.ra == nil || !errors.As(err, &pe) || pe.Err != nil {
		return err
	}
	if _, zerr := io.Copy(io.Discard, p.lines.br); zerr != nil {
		pe.Msg = fmt.Sprintf("%s (corrupt file; the text here reads as: %s)", gzipMessage(zerr), pe.Msg)
		pe.Err = zerr
	}
	return pe
}

func (p *parser) errorf(col int, format string, args ...any) error {
	return errorf(p.name, p.lines.line, col, format, args...)
}

func (p *parser) parse() (*Dataset, error) {
	p.xMax, p.yMax = -1, -1
	capRows := 1024
	if p.opt.Format == FormatXMC {
		if err := p.readHeader(); err != nil {
			return nil, err
		}
		// The header may lie: preallocate only a bounded amount.
		capRows = min(p.n, 1<<16)
	} else {
		p.featBase = 1
		p.xLim, p.xAuto = int64(p.opt.D), p.opt.D == 0
		p.yLim, p.yAuto = int64(p.opt.L), p.opt.L == 0
		if p.xAuto {
			p.xLim = maxDim
		}
		if p.yAuto {
			p.yLim = maxDim
		}
	}
	p.xPtr = append(make([]int64, 0, capRows+1), 0)
	p.yPtr = append(make([]int64, 0, capRows+1), 0)

	rows := 0
	for {
		line, err := p.lines.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if p.hasHeader && rows == p.n {
			return nil, p.errorf(1, "more rows than header N=%d", p.n)
		}
		if err := p.parseRow(line); err != nil {
			return nil, err
		}
		rows++
	}
	if p.hasHeader && rows < p.n {
		return nil, errorf(p.name, p.lines.line+1, 1, "end of file after %d rows, header N=%d", rows, p.n)
	}

	d := &Dataset{
		X: CSR{Rows: rows, Indptr: clip(p.xPtr), Indices: p.xIdx.join(), Values: p.xVal.join()},
		Y: CSR{Rows: rows, Indptr: clip(p.yPtr), Indices: p.yIdx.join()},
	}
	d.Y.Values = make([]float32, len(d.Y.Indices))
	for k := range d.Y.Values {
		d.Y.Values[k] = 1
	}
	switch {
	case p.hasHeader:
		d.X.Cols, d.Y.Cols = max(p.hd, p.opt.D), max(p.hl, p.opt.L)
	default:
		d.X.Cols, d.Y.Cols = p.opt.D, p.opt.L
		if p.xAuto {
			d.X.Cols = int(p.xMax) + 1
		}
		if p.yAuto {
			d.Y.Cols = int(p.yMax) + 1
		}
	}
	return d, nil
}

// chunks accumulates a long sequence in chunks that never move, so that
// growing it copies nothing, and joins them once into an exactly sized slice.
// Growing one slice by append would copy its contents many times over and
// leave up to a quarter of it as spare capacity.
type chunks[T any] struct {
	done [][]T
	cur  []T
	n    int
}

func (c *chunks[T]) append(v []T) {
	for len(v) > 0 {
		if len(c.cur) == cap(c.cur) {
			if c.cur != nil {
				c.done = append(c.done, c.cur)
			}
			c.cur = make([]T, 0, min(max(1024, 2*cap(c.cur)), 1<<20))
		}
		k := min(len(v), cap(c.cur)-len(c.cur))
		c.cur = append(c.cur, v[:k]...)
		c.n += k
		v = v[k:]
	}
}

func (c *chunks[T]) join() []T {
	out := make([]T, 0, c.n)
	for i, d := range c.done {
		out = append(out, d...)
		c.done[i] = nil // let the collector have it
	}
	out = append(out, c.cur...)
	*c = chunks[T]{}
	return out
}

// clip returns s with little spare capacity, copying it if append's growth
// left much: datasets stay in memory for the whole training run.
func clip[T any](s []T) []T {
	if cap(s)-len(s) > len(s)/16 {
		return slices.Clone(s)
	}
	return s
}

// readHeader parses the XMC header "N D L".
func (p *parser) readHeader() error {
	line, err := p.lines.next()
	if err == io.EOF {
		return errorf(p.name, 1, 1, "empty file, expected header \"N D L\"")
	}
	if err != nil {
		return err
	}
	p.hasHeader = true
	var vals [3]int
	names := [3]string{"N", "D", "L"}
	i, k := 0, 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		start := i
		for i < len(line) && !isSpace(line[i]) {
			i++
		}
		tok := line[start:i]
		if k == 3 {
			return p.errorf(start+1, "header has extra field %s, expected \"N D L\"", quote(tok))
		}
		v, err := strconv.ParseInt(string(tok), 10, 64)
		if err != nil || v < 0 {
			return p.errorf(start+1, "header %s: expected a non-negative integer, found %s", names[k], quote(tok))
		}
		if k > 0 && v > maxDim {
			return p.errorf(start+1, "header %s=%d exceeds %d (ids are int32)", names[k], v, maxDim)
		}
		vals[k] = int(v)
		k++
	}
	if k < 3 {
		return p.errorf(len(line)+1, "header has %d fields, expected 3: \"N D L\"", k)
	}
	p.n, p.hd, p.hl = vals[0], vals[1], vals[2]
	if p.opt.D != 0 && p.opt.D < p.hd {
		return p.errorf(1, "header D=%d exceeds ReadOptions.D=%d", p.hd, p.opt.D)
	}
	if p.opt.L != 0 && p.opt.L < p.hl {
		return p.errorf(1, "header L=%d exceeds ReadOptions.L=%d", p.hl, p.opt.L)
	}
	p.xLim, p.yLim = int64(p.hd), int64(p.hl)
	return nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// parseRow parses one instance line and appends it to the matrices.
func (p *parser) parseRow(b []byte) error {
	i, err := p.parseLabels(b)
	if err != nil {
		return err
	}
	if err := p.parseFeatures(b, i); err != nil {
		return err
	}
	p.yIdx.append(p.lab.idx)
	p.yPtr = append(p.yPtr, int64(p.yIdx.n))
	p.xIdx.append(p.feat.idx)
	p.xVal.append(p.feat.val)
	p.xPtr = append(p.xPtr, int64(p.xIdx.n))
	return nil
}

// parseLabels parses the comma-separated label ids at the start of line b
// and returns where the features start. A line starting with a space or
// with a feature "f:v" has no labels.
func (p *parser) parseLabels(b []byte) (int, error) {
	p.lab.reset()
	if len(b) == 0 || isSpace(b[0]) {
		return 0, nil
	}
	idx := p.lab.idx
	prev := int64(-1)
	sorted := true
	i := 0
	for {
		start := i
		var id int64
		for i < len(b) && b[i]-'0' <= 9 {
			id = id*10 + int64(b[i]-'0')
			if id > maxDim {
				if start == 0 && startsWithFeature(b) {
					return 0, nil
				}
				return 0, p.errorf(start+1, "label id %s too large", quote(b[start:tokenEnd(b, start, ',')]))
			}
			i++
		}
		end := i == len(b) || isSpace(b[i])
		switch {
		case start == 0 && !end && b[i] != ',' && startsWithFeature(b):
			return 0, nil
		case i == start && !end && b[i] == ',':
			return 0, p.errorf(start+1, "empty label id before ','")
		case i == start && !end && b[i] == '-':
			return 0, p.errorf(start+1, "negative label id %s", quote(b[start:tokenEnd(b, start, ',')]))
		case i == start:
			return 0, p.errorf(start+1, "expected label id, found %s", quote(b[start:tokenEnd(b, start, ',')]))
		case !end && b[i] != ',':
			return 0, p.errorf(start+1, "malformed label id %s", quote(b[start:tokenEnd(b, start, ',')]))
		case id <= prev || id >= p.yLim:
			if err := p.checkID("label", id, id, prev, start); err != nil {
				return 0, err
			}
			sorted = false
		}
		prev = id
		idx = append(idx, int32(id))
		if end {
			break
		}
		i++ // skip ','
		if i == len(b) || isSpace(b[i]) {
			return 0, p.errorf(i+1, "expected label id after ','")
		}
	}
	p.lab.idx = idx
	if !sorted {
		if err := p.sortRow(b, &p.lab, "label", 0); err != nil {
			return 0, err
		}
	}
	p.yMax = max(p.yMax, idx[len(idx)-1])
	return i, nil
}

// startsWithFeature reports whether the first token of line b contains a
// ':', making it a feature "f:v" rather than a label list.
func startsWithFeature(b []byte) bool {
	return bytes.IndexByte(b[:tokenEnd(b, 0, 0)], ':') >= 0
}

// tokenEnd returns the end of the token starting at b[i], which ends at a
// space, a tab or sep.
func tokenEnd(b []byte, i int, sep byte) int {
	for i < len(b) && !isSpace(b[i]) && b[i] != sep {
		i++
	}
	return i
}

// checkID is the slow path for an id that is out of order or out of range:
// it returns the error for a bad one (id as in the file, stored as kept,
// prev the one before it in the row), and nil for one that is merely out of
// order, leaving the row to be sorted.
func (p *parser) checkID(what string, id, stored, prev int64, start int) error {
	lim, auto, src := p.xLim, p.xAuto, "D"
	if what == "label" {
		lim, auto, src = p.yLim, p.yAuto, "L"
	}
	from := "ReadOptions"
	if p.hasHeader {
		from = "header"
	}
	switch {
	case stored < 0:
		return p.errorf(start+1, "feature id 0: LIBSVM feature ids start at 1")
	case stored >= lim && auto:
		return p.errorf(start+1, "%s id %d too large", what, id)
	case stored >= lim && id != stored:
		return p.errorf(start+1, "%s id %d > %s=%d (%s; LIBSVM ids are 1-based)", what, id, src, lim, from)
	case stored >= lim:
		return p.errorf(start+1, "%s id %d >= %s=%d (%s)", what, id, src, lim, from)
	case stored == prev:
		return p.errorf(start+1, "duplicate %s id %d", what, id)
	}
	return nil
}

// parseFeatures parses the "f:v" tokens of b from position i on.
func (p *parser) parseFeatures(b []byte, i int) error {
	p.feat.reset()
	idx, val := p.feat.idx, p.feat.val
	prev := int64(-1)
	sorted := true
	base := p.featBase
	for {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i == len(b) {
			break
		}
		start := i
		var id int64
		for i < len(b) && b[i]-'0' <= 9 {
			id = id*10 + int64(b[i]-'0')
			if id > maxDim {
				return p.errorf(start+1, "feature id in %s too large", quote(b[start:tokenEnd(b, start, 0)]))
			}
			i++
		}
		if i == start || i == len(b) || b[i] != ':' {
			return p.badFeature(b, start)
		}
		i++
		vstart := i
		for i < len(b) && !isSpace(b[i]) {
			i++
		}
		var v float32
		if i-vstart == 1 && b[vstart]-'0' <= 9 {
			v = float32(b[vstart] - '0') // the common binary "f:1"
		} else {
			var msg string
			if v, msg = parseValue(b[vstart:i]); msg != "" {
				return p.errorf(vstart+1, "%s", msg)
			}
		}
		stored := id - base
		if stored <= prev || stored >= p.xLim {
			if err := p.checkID("feature", id, stored, prev, start); err != nil {
				return err
			}
			sorted = false
		}
		prev = stored
		idx = append(idx, int32(stored))
		val = append(val, v)
	}
	p.feat.idx, p.feat.val = idx, val
	if len(idx) == 0 {
		return nil
	}
	if !sorted {
		if err := p.sortRow(b, &p.feat, "feature", base); err != nil {
			return err
		}
	}
	p.xMax = max(p.xMax, idx[len(idx)-1])
	return nil
}

// badFeature explains why the token at b[start] is not "id:value".
func (p *parser) badFeature(b []byte, start int) error {
	tok := quote(b[start:tokenEnd(b, start, 0)])
	switch i := start; {
	case b[i] == '-':
		return p.errorf(start+1, "negative feature id in %s", tok)
	case b[i]-'0' > 9:
		return p.errorf(start+1, "expected feature id:value, found %s", tok)
	case !p.hasHeader && p.lines.line == 1:
		return p.errorf(start+1, "expected ':' after feature id in %s (if line 1 is a header \"N D L\", the format is xmc, not libsvm)", tok)
	default:
		return p.errorf(start+1, "expected ':' after feature id in %s", tok)
	}
}

// parseValue parses a feature value. It returns a message saying what is
// wrong instead of an error so that the caller can add the position.
func parseValue(b []byte) (float32, string) {
	if len(b) == 0 {
		return 0, "missing feature value after ':'"
	}
	// Small integers are exact in float32; skip strconv for them.
	if len(b) <= 7 {
		n := 0
		i := 0
		for ; i < len(b) && b[i]-'0' <= 9; i++ {
			n = n*10 + int(b[i]-'0')
		}
		if i == len(b) {
			return float32(n), ""
		}
	}
	f, err := strconv.ParseFloat(string(b), 32)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Sprintf("feature value %s out of float32 range", quote(b))
	case err != nil:
		return 0, fmt.Sprintf("malformed feature value %s", quote(b))
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Sprintf("feature value %s is not finite", quote(b))
	}
	return float32(f), ""
}

// sortRow sorts the staged row r of line b by id, carrying values along,
// and rejects repeated ids. base is added back to ids in messages.
func (p *parser) sortRow(b []byte, r *rowBuf, what string, base int64) error {
	sort.Sort((*rowSorter)(r))
	for k := 1; k < len(r.idx); k++ {
		if r.idx[k] == r.idx[k-1] {
			id := int64(r.idx[k]) + base
			first, second := columnsOf(b, what == "label", id)
			return p.errorf(second, "duplicate %s id %d (also at column %d)", what, id, first)
		}
	}
	return nil
}

// columnsOf returns the line columns of the first two label or feature
// tokens with the given id in the well-formed row b. Only the error path for
// duplicates in unsorted rows needs them, so the parser does not track the
// columns of all tokens.
func columnsOf(b []byte, labels bool, id int64) (first, second int) {
	var cols []int
	i := 0
	if len(b) > 0 && !isSpace(b[0]) && !startsWithFeature(b) {
		// The label token: ids separated by ','.
		for end := tokenEnd(b, 0, 0); i < end; i++ {
			start := i
			i = tokenEnd(b, i, ',')
			if labels && parseDigits(b[start:i]) == id {
				cols = append(cols, start+1)
			}
		}
	}
	for !labels && i < len(b) {
		if isSpace(b[i]) {
			i++
			continue
		}
		start := i
		i = tokenEnd(b, i, 0)
		if parseDigits(b[start:tokenEnd(b[:i], start, ':')]) == id {
			cols = append(cols, start+1)
		}
	}
	if len(cols) < 2 {
		return 0, 0 // unreachable for a row with a duplicate
	}
	return cols[0], cols[1]
}

// parseDigits returns the value of the decimal digits in b, or -1 if b is
// empty, too long or holds anything else.
func parseDigits(b []byte) int64 {
	if len(b) == 0 || len(b) > 18 {
		return -1
	}
	var n int64
	for _, c := range b {
		if c-'0' > 9 {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// rowSorter sorts a staged row.
type rowSorter rowBuf

func (s *rowSorter) Len() int           { return len(s.idx) }
func (s *rowSorter) Less(i, j int) bool { return s.idx[i] < s.idx[j] }
func (s *rowSorter) Swap(i, j int) {
	s.idx[i], s.idx[j] = s.idx[j], s.idx[i]
	if s.val != nil {
		s.val[i], s.val[j] = s.val[j], s.val[i]
	}
}
