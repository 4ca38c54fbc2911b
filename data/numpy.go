package data

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"codeberg.org/sbinet/npyio/npy"
	"github.com/klauspost/compress/flate"
)

// The NumPy files of Python's extreme classification tools (pyxclib, PECOS)
// hold a SciPy sparse CSR matrix in an .npz archive (scipy.sparse.save_npz:
// the arrays indptr, indices, data, shape and format) or a dense 2-D array
// in an .npy file (numpy.save). The arrays' headers are parsed by npyio,
// their elements decoded by encoding/binary a chunk at a time. The archive
// is opened with archive/zip rather than npyio's npz reader so that every
// member's size is known, and checked against the shape its header claims,
// before anything is allocated, and so that every member's CRC is checked.

// ReadMatrix reads the matrix in the NumPy file at path: a SciPy CSR matrix
// (.npz) or a dense 2-D array (.npy, whose zeros are dropped), told apart
// by their first bytes. Indices, pointers and values may have any integer,
// float or bool dtype and either byte order; the matrix returned follows
// the CSR invariants (a row's columns sorted, values finite). A file that
// is truncated, holds a dtype or shape other than these, indices out of
// range or repeated in a row, or a non-finite value gets a *ParseError
// naming the file and the array.
func ReadMatrix(path string) (*CSR, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read matrix: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read matrix: %w", err)
	}
	return readMatrix(f, st.Size(), path)
}

// readMatrix reads the matrix in r, a file of size bytes named path.
func readMatrix(r interface {
	io.ReadSeeker
	io.ReaderAt
}, size int64, path string) (*CSR, error) {
	var magic [6]byte
	n, err := io.ReadFull(r, magic[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, &ParseError{File: path, Msg: "read: " + err.Error(), Err: err}
	}
	switch {
	case bytes.HasPrefix(magic[:n], []byte("PK")):
		return readSparse(r, size, path)
	case magic == npy.Magic:
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return nil, &ParseError{File: path, Msg: "read: " + err.Error(), Err: err}
		}
		return readDense(r, size, path)
	}
	return nil, errorf(path, 0, 0, "neither a NumPy .npz archive nor a .npy array (the file starts with %s)", quote(magic[:n]))
}

// numpyArray is one array being read: its decoder, the number of elements
// its header announces and the stream behind it.
type numpyArray struct {
	file, name string // for messages: the file and the array's name in it
	r          *npy.Reader
	src        io.Reader // the bytes after the header
	shape      []int
	n          int // number of elements
}

// openArray reads the header of the array stored in r, of size bytes, and
// checks that its dtype is a number and that the elements it announces are
// exactly the bytes that follow.
func openArray(r io.Reader, size int64, file, name string) (*numpyArray, error) {
	buffered := bufio.NewReaderSize(r, 1<<16)
	if err := checkHeaderLength(buffered); err != nil {
		return nil, errorf(file, 0, 0, "%s: %v", name, err)
	}
	counted := &countingReader{r: buffered}
	var dec *npy.Reader
	err := guard(func() (err error) { dec, err = npy.NewReader(counted); return err })
	if err != nil {
		return nil, errorf(file, 0, 0, "%s: not a NumPy array: %v", name, err)
	}
	a := &numpyArray{file: file, name: name, r: dec, src: counted, shape: dec.Header.Descr.Shape}
	itemSize, ok := numericItemSize(dec.Header.Descr.Type)
	if !ok {
		return nil, a.errorf("dtype %s, want numbers (integers, floats or bools)", a.descr())
	}
	n := int64(1)
	for _, s := range a.shape {
		if s < 0 || (s > 0 && n > math.MaxInt64/int64(itemSize)/int64(s)) {
			return nil, a.errorf("shape %v out of range", a.shape)
		}
		n *= int64(s)
	}
	if want := size - counted.n; n*int64(itemSize) != want {
		return nil, a.errorf("shape %v of %d-byte items needs %d bytes, the file holds %d (truncated or corrupt?)",
			a.shape, itemSize, n*int64(itemSize), want)
	}
	a.n = int(n)
	return a, nil
}

// maxHeaderBytes bounds an array's header, as NumPy's own reader does by
// default (numpy.lib.format's max_header_size): npyio's parse of a header
// takes time quadratic in its length, and a corrupt length of megabytes
// must be an error, not minutes of parsing.
const maxHeaderBytes = 10000

// checkHeaderLength reports an array whose preamble in r (the magic
// "\x93NUMPY", the format's version, then the header's length: 2 bytes in
// version 1, 4 in versions 2 and 3) announces a header longer than
// maxHeaderBytes, without consuming it. Whatever is not a preamble passes,
// for npyio to report.
func checkHeaderLength(r *bufio.Reader) error {
	pre, err := r.Peek(12)
	if len(pre) < 10 || string(pre[:6]) != "\x93NUMPY" {
		return nil
	}
	var n int64
	if pre[6] == 1 {
		n = int64(binary.LittleEndian.Uint16(pre[8:10]))
	} else if err == nil {
		n = int64(binary.LittleEndian.Uint32(pre[8:12]))
	}
	if n > maxHeaderBytes {
		return fmt.Errorf("a NumPy header of %d bytes, want at most %d (corrupt?)", n, maxHeaderBytes)
	}
	return nil
}

func (a *numpyArray) errorf(format string, args ...any) *ParseError {
	return errorf(a.file, 0, 0, "%s: %s", a.name, fmt.Sprintf(format, args...))
}

// descr returns the array's dtype as NumPy writes it: "<f8", "|b1".
func (a *numpyArray) descr() string { return strings.Trim(a.r.Header.Descr.Type, `'"`) }

// dtype returns the array's dtype without its byte order: "f8", "i4", "b1".
func (a *numpyArray) dtype() string { return strings.TrimLeft(a.descr(), "<>|=") }

// numericItemSize returns the size in bytes of the elements of a numeric
// dtype such as "<f8" or "|b1" (quoted as in a header or not).
func numericItemSize(dtype string) (int, bool) {
	switch t := strings.TrimLeft(strings.Trim(dtype, `'"`), "<>|="); t {
	case "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8", "b1":
		return int(t[1] - '0'), true
	}
	return 0, false
}

// finish checks that nothing follows the array's elements; reading to the
// end of an archive member also checks its CRC.
func (a *numpyArray) finish() error {
	var b [1]byte
	n, err := a.src.Read(b[:])
	for n == 0 && err == nil {
		n, err = a.src.Read(b[:])
	}
	switch {
	case n > 0:
		return a.errorf("bytes follow the %d elements of shape %v", a.n, a.shape)
	case err != io.EOF:
		return a.readError(err)
	}
	return nil
}

func (a *numpyArray) readError(err error) error {
	e := a.errorf("read: %v", err)
	e.Err = err
	return e
}

// guard runs an npyio decoding step, turning a panic into an error: the
// decoder panics on some malformed headers (a slice out of bounds, found by
// FuzzReadMatrix) rather than returning an error.
func guard(decode func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed NumPy array (%v)", p)
		}
	}()
	return decode()
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readAs reads the array's elements as a []S, S matching its dtype. The
// elements are decoded here, a chunk at a time by encoding/binary, rather
// than by npyio, which reads them one by one at several times the cost of
// parsing the same matrix as text.
func readAs[S bool | integer | float32 | float64](a *numpyArray) ([]S, error) {
	var order binary.ByteOrder = binary.LittleEndian
	if strings.HasPrefix(a.descr(), ">") {
		order = binary.BigEndian
	} else if strings.HasPrefix(a.descr(), "=") {
		order = binary.NativeEndian
	}
	s := make([]S, a.n)
	const chunk = 1 << 14
	for k := 0; k < len(s); k += chunk {
		if err := binary.Read(a.src, order, s[k:min(k+chunk, len(s))]); err != nil {
			return nil, a.readError(err)
		}
	}
	if err := a.finish(); err != nil {
		return nil, err
	}
	return s, nil
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// readIntegers reads an array of integers as []T, failing on a value
// outside T's range or on a float or bool dtype.
func readIntegers[T int32 | int64](a *numpyArray) ([]T, error) {
	switch a.dtype() {
	case "i1":
		return readConverted[int8, T](a)
	case "i2":
		return readConverted[int16, T](a)
	case "i4":
		return readConverted[int32, T](a)
	case "i8":
		return readConverted[int64, T](a)
	case "u1":
		return readConverted[uint8, T](a)
	case "u2":
		return readConverted[uint16, T](a)
	case "u4":
		return readConverted[uint32, T](a)
	case "u8":
		return readConverted[uint64, T](a)
	}
	return nil, a.errorf("dtype %s, want integers", a.descr())
}

// readConverted reads an array of S and converts it to T, checking the
// range; a []S that already is a []T is returned as is.
func readConverted[S integer, T int32 | int64](a *numpyArray) ([]T, error) {
	s, err := readAs[S](a)
	if err != nil {
		return nil, err
	}
	if t, ok := any(s).([]T); ok {
		return t, nil
	}
	t := make([]T, len(s))
	for k, v := range s {
		t[k] = T(v)
		if uint64(t[k]) != uint64(v) || (t[k] < 0) != (v < 0) {
			return nil, a.errorf("element %d is %d, out of the range of %T", k, v, t[k])
		}
	}
	return t, nil
}

// readValues reads an array of numbers as float32 values: floats are
// rounded, integers and bools converted. A value that is not finite as a
// float32 is an error.
func readValues(a *numpyArray) ([]float32, error) {
	var vals []float32
	var err error
	switch a.dtype() {
	case "f4":
		vals, err = readAs[float32](a)
	case "f8":
		vals, err = readFloats[float64](a)
	case "b1":
		var b []bool
		if b, err = readAs[bool](a); err == nil {
			vals = make([]float32, len(b))
			for k, v := range b {
				if v {
					vals[k] = 1
				}
			}
		}
	default:
		var v []int64
		if v, err = readIntegers[int64](a); err == nil {
			vals = make([]float32, len(v))
			for k, x := range v {
				vals[k] = float32(x)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	for k, v := range vals {
		if math.Float32bits(v)&0x7f800000 == 0x7f800000 { // NaN or ±Inf
			return nil, a.errorf("element %d is %v, want a finite float32", k, v)
		}
	}
	return vals, nil
}

func readFloats[S float64](a *numpyArray) ([]float32, error) {
	s, err := readAs[S](a)
	if err != nil {
		return nil, err
	}
	vals := make([]float32, len(s))
	for k, v := range s {
		vals[k] = float32(v)
	}
	return vals, nil
}

// maxDeflateRatio bounds the size of a member that deflate can inflate from
// its compressed size, so that a corrupt size in an archive's directory
// cannot make the reader allocate more than the data could hold.
const maxDeflateRatio = 1032

// readSparse reads the SciPy sparse matrix in the .npz archive r.
func readSparse(r io.ReaderAt, size int64, path string) (*CSR, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, &ParseError{File: path, Msg: "not a readable .npz (zip) archive: " + err.Error(), Err: err}
	}
	z.RegisterDecompressor(zip.Deflate, func(r io.Reader) io.ReadCloser { return flate.NewReader(r) })
	members := map[string]*zip.File{}
	for _, f := range z.File {
		members[strings.TrimSuffix(f.Name, ".npy")] = f
	}
	open := func(name string) (*numpyArray, io.Closer, error) {
		f, ok := members[name]
		if !ok {
			return nil, nil, errorf(path, 0, 0, "no array %q: not a SciPy sparse matrix (scipy.sparse.save_npz writes indptr, indices, data, shape and format)", name)
		}
		if f.Method == zip.Deflate && f.UncompressedSize64 > maxDeflateRatio*f.CompressedSize64+1<<10 {
			return nil, nil, errorf(path, 0, 0, "%s.npy: %d bytes claimed from %d compressed: corrupt archive", name, f.UncompressedSize64, f.CompressedSize64)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, nil, &ParseError{File: path, Msg: name + ".npy: " + err.Error(), Err: err}
		}
		a, err := openArray(rc, int64(f.UncompressedSize64), path, name+".npy")
		if err != nil {
			rc.Close()
			return nil, nil, err
		}
		return a, rc, nil
	}
	if err := checkSparseFormat(members["format"], path); err != nil {
		return nil, err
	}
	m := &CSR{}
	if err := readShape(open, m); err != nil {
		return nil, err
	}
	if err := readArrays(open, m, path); err != nil {
		return nil, err
	}
	if err := canonicalize(m, path); err != nil {
		return nil, err
	}
	return m, nil
}

// checkSparseFormat checks that the archive's format array names CSR.
func checkSparseFormat(f *zip.File, path string) error {
	if f == nil {
		return errorf(path, 0, 0, "no array \"format\": not a SciPy sparse matrix (scipy.sparse.save_npz writes indptr, indices, data, shape and format)")
	}
	rc, err := f.Open()
	if err != nil {
		return &ParseError{File: path, Msg: "format.npy: " + err.Error(), Err: err}
	}
	defer rc.Close()
	if f.UncompressedSize64 > 1<<10 {
		return errorf(path, 0, 0, "format.npy: %d bytes, want a short string", f.UncompressedSize64)
	}
	br := bufio.NewReader(rc)
	if err := checkHeaderLength(br); err != nil {
		return errorf(path, 0, 0, "format.npy: %v", err)
	}
	var format string
	if err := guard(func() error { return npy.Read(br, &format) }); err != nil {
		return &ParseError{File: path, Msg: "format.npy: want a string: " + err.Error(), Err: err}
	}
	if format != "csr" {
		return errorf(path, 0, 0, "a SciPy %q matrix: xmc reads CSR matrices (save m.tocsr())", format)
	}
	return nil
}

type arrayOpener func(name string) (*numpyArray, io.Closer, error)

// readShape reads the shape array into m.Rows and m.Cols.
func readShape(open arrayOpener, m *CSR) error {
	a, c, err := open("shape")
	if err != nil {
		return err
	}
	defer c.Close()
	if len(a.shape) != 1 || a.n != 2 {
		return a.errorf("shape %v, want 2 elements", a.shape)
	}
	shape, err := readIntegers[int64](a)
	if err != nil {
		return err
	}
	if shape[0] < 0 || shape[1] < 0 || shape[0] > math.MaxInt32 || shape[1] > maxDim {
		return a.errorf("matrix shape %d × %d out of range [0, %d]", shape[0], shape[1], maxDim)
	}
	m.Rows, m.Cols = int(shape[0]), int(shape[1])
	return nil
}

// readArrays reads the row pointers, column indices and values into m,
// once their headers agree with each other and with m's shape. The three
// arrays are inflated and decoded at the same time, each by a goroutine of
// its own: inflating is the most of the time, and one stream cannot be
// inflated by several cores.
func readArrays(open arrayOpener, m *CSR, path string) error {
	names := []string{"indptr", "indices", "data"}
	arrays := make([]*numpyArray, len(names))
	for k, name := range names {
		a, c, err := open(name)
		if err != nil {
			return err
		}
		defer c.Close()
		arrays[k] = a
	}
	indptr, indices, data := arrays[0], arrays[1], arrays[2]
	switch {
	case indptr.n != m.Rows+1:
		return indptr.errorf("%d row pointers for %d rows, want %d", indptr.n, m.Rows, m.Rows+1)
	case indices.n != data.n:
		return errorf(path, 0, 0, "indices.npy has %d elements, data.npy %d: want as many", indices.n, data.n)
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	wg.Go(func() { m.Indptr, errs[0] = readIntegers[int64](indptr) })
	wg.Go(func() { m.Indices, errs[1] = readIntegers[int32](indices) })
	wg.Go(func() { m.Values, errs[2] = readValues(data) })
	wg.Wait()
	return errors.Join(errs...)
}

// canonicalize checks the row pointers and column indices of m and sorts
// each row's entries by column, as SciPy does not require it.
func canonicalize(m *CSR, path string) error {
	nnz := int64(len(m.Indices))
	if m.Indptr[0] != 0 || m.Indptr[m.Rows] != nnz {
		return errorf(path, 0, 0, "indptr.npy runs from %d to %d, want 0 to %d (the number of indices)", m.Indptr[0], m.Indptr[m.Rows], nnz)
	}
	for i := range m.Rows {
		if lo, hi := m.Indptr[i], m.Indptr[i+1]; hi < lo {
			return errorf(path, 0, 0, "indptr.npy: row %d ends at %d before it starts at %d", i, hi, lo)
		}
	}
	for i := range m.Rows {
		lo, hi := m.Indptr[i], m.Indptr[i+1]
		idx, val := m.Indices[lo:hi], m.Values[lo:hi]
		for _, j := range idx {
			if j < 0 || int(j) >= m.Cols {
				return errorf(path, 0, 0, "indices.npy: row %d: column %d outside [0, %d)", i, j, m.Cols)
			}
		}
		if !slices.IsSorted(idx) {
			sort.Sort(&rowSorter{idx: idx, val: val})
		}
		for k := 1; k < len(idx); k++ {
			if idx[k] == idx[k-1] {
				return errorf(path, 0, 0, "indices.npy: row %d: column %d stored twice (call m.sum_duplicates() before saving)", i, idx[k])
			}
		}
	}
	return nil
}

// readDense reads the dense 2-D array in the .npy file r as a CSR matrix
// of its non-zero elements.
func readDense(r io.Reader, size int64, path string) (*CSR, error) {
	a, err := openArray(r, size, path, "array")
	if err != nil {
		return nil, err
	}
	if len(a.shape) != 2 || a.shape[0] > math.MaxInt32 || a.shape[1] > maxDim {
		return nil, a.errorf("shape %v, want a 2-D array (rows × columns, each at most %d)", a.shape, maxDim)
	}
	vals, err := readValues(a)
	if err != nil {
		return nil, err
	}
	rows, cols := a.shape[0], a.shape[1]
	at := func(i, j int) float32 { return vals[i*cols+j] }
	if a.r.Header.Descr.Fortran {
		at = func(i, j int) float32 { return vals[j*rows+i] }
	}
	m := &CSR{Rows: rows, Cols: cols, Indptr: make([]int64, rows+1)}
	for i := range rows {
		for j := range cols {
			if v := at(i, j); v != 0 {
				m.Indices = append(m.Indices, int32(j))
				m.Values = append(m.Values, v)
			}
		}
		m.Indptr[i+1] = int64(len(m.Indices))
	}
	return m, nil
}

// WriteNPZ writes m to w as scipy.sparse.save_npz does, so that
// scipy.sparse.load_npz (and pyxclib, PECOS) read it back: the arrays
// indices, indptr (int32 while the entries fit, int64 beyond), format
// ("csr"), shape and data (float32). Deflated (compress, as save_npz by
// default) the file is smaller, but slower to read than the same matrix
// stored as is (as save_npz(compressed=False)), which is still smaller
// than its text.
func WriteNPZ(w io.Writer, m *CSR, compress bool) error {
	z := zip.NewWriter(w)
	z.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.DefaultCompression)
	})
	method := zip.Store
	if compress {
		method = zip.Deflate
	}
	var err error
	write := func(name, descr string, v any, n int) {
		if err != nil {
			return
		}
		var f io.Writer
		if f, err = z.CreateHeader(&zip.FileHeader{Name: name, Method: method}); err != nil {
			return
		}
		if n == 0 {
			err = writeEmptyArray(f, descr)
		} else {
			err = npy.Write(f, v)
		}
	}
	nnz := int(m.NNZ())
	if nnz <= math.MaxInt32 {
		ptr := make([]int32, len(m.Indptr))
		for i, p := range m.Indptr {
			ptr[i] = int32(p)
		}
		write("indices.npy", "<i4", m.Indices[:nnz], nnz)
		write("indptr.npy", "<i4", ptr, len(ptr))
	} else {
		idx := make([]int64, nnz)
		for k, j := range m.Indices[:nnz] {
			idx[k] = int64(j)
		}
		write("indices.npy", "<i8", idx, nnz)
		write("indptr.npy", "<i8", m.Indptr, len(m.Indptr))
	}
	write("format.npy", "<U3", "csr", 1)
	write("shape.npy", "<i8", []int64{int64(m.Rows), int64(m.Cols)}, 2)
	write("data.npy", "<f4", m.Values[:nnz], nnz)
	if cerr := z.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write npz: %w", err)
	}
	return nil
}

// writeEmptyArray writes a 1-D array of no elements in the .npy format
// 1.0. It is written here because npyio writes an empty slice as an array
// of shape (), which NumPy cannot read back.
func writeEmptyArray(w io.Writer, descr string) error {
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (0,), }", descr)
	const prefix = 10 // magic, version and header length
	header += strings.Repeat(" ", 63-(prefix+len(header))%64) + "\n"
	b := append(npy.Magic[:], 1, 0, byte(len(header)), byte(len(header)>>8))
	_, err := w.Write(append(b, header...))
	return err
}

// ReadNumPy reads a dataset in FormatNPZ: the features from the NumPy file
// at path, the labels from opt.Labels or the file LabelsPath names. Every
// non-zero entry of the label matrix is a label. The two matrices must have
// as many rows; opt.D and opt.L may widen them, as for the XMC format.
func ReadNumPy(path string, opt ReadOptions) (*Dataset, error) {
	labels := opt.Labels
	if labels == "" {
		var err error
		if labels, err = LabelsPath(path); err != nil {
			return nil, err
		}
	}
	var x, y *CSR
	var xErr, yErr error
	var wg sync.WaitGroup
	wg.Go(func() { x, xErr = ReadMatrix(path) })
	if labels != NoLabels {
		wg.Go(func() { y, yErr = ReadMatrix(labels) })
	}
	wg.Wait()
	if err := errors.Join(xErr, yErr); err != nil {
		return nil, err
	}
	d := &Dataset{X: *x, Y: CSR{Rows: x.Rows, Indptr: make([]int64, x.Rows+1)}}
	if y != nil {
		if y.Rows != x.Rows {
			return nil, fmt.Errorf("read %s: %d rows of labels for the %d rows of features in %s", labels, y.Rows, x.Rows, path)
		}
		d.Y = binarize(y)
	}
	d.X.Cols, d.Y.Cols = max(d.X.Cols, opt.D), max(d.Y.Cols, opt.L)
	if opt.Normalize {
		NormalizeRows(&d.X)
	}
	return d, nil
}

// binarize returns the non-zero entries of y, each with the value 1.
func binarize(y *CSR) CSR {
	b := CSR{Rows: y.Rows, Cols: y.Cols, Indptr: make([]int64, y.Rows+1), Indices: make([]int32, 0, y.NNZ())}
	for i := range y.Rows {
		idx, val := y.Row(i)
		for k, l := range idx {
			if val[k] != 0 {
				b.Indices = append(b.Indices, l)
			}
		}
		b.Indptr[i+1] = int64(len(b.Indices))
	}
	b.Values = make([]float32, len(b.Indices))
	for k := range b.Values {
		b.Values[k] = 1
	}
	return b
}

// labelsNames maps the words that name a features file to those of its
// labels file, in the order LabelsPath tries them: pyxclib's trn_X_Xf.npz
// and trn_X_Y.npz, PECOS's X.trn.npz and Y.trn.npz, and spelled out.
var labelsNames = [][2]string{{"Xf", "Y"}, {"X", "Y"}, {"features", "labels"}}

// LabelsPath names the labels file of the features file at path, the
// convention of Python's XMC tools: the word Xf, X or features in the file's
// name, between the separators . _ and -, becomes Y, Y or labels
// (X.trn.npz → Y.trn.npz, trn_X_Xf.npz → trn_X_Y.npz). The first of these
// words that the name holds exactly once is replaced; a name holding none
// is an error.
func LabelsPath(path string) (string, error) {
	dir, base := filepath.Split(path)
	type word struct{ start, end int }
	var words []word
	start := 0
	for i, r := range base + "." { // a separator ends the last word
		if r == '.' || r == '_' || r == '-' {
			if i > start {
				words = append(words, word{start, i})
			}
			start = i + 1
		}
	}
	for _, pair := range labelsNames {
		var found []word
		for _, w := range words {
			if base[w.start:w.end] == pair[0] {
				found = append(found, w)
			}
		}
		if len(found) == 1 {
			w := found[0]
			return dir + base[:w.start] + pair[1] + base[w.end:], nil
		}
	}
	return "", fmt.Errorf("read %s: cannot name its labels file, as its name holds none of the words Xf, X and features: name the labels file", path)
}
