package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"xmc/checksum"
)

// ReadFile reads and verifies the model file at path: magic, version, every
// section checksum and the end marker. Errors name the file and, where it
// applies, the section, and wrap one of [ErrNotModel], [ErrTruncated],
// [ErrChecksum], [ErrVersion] or [ErrCorrupt].
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read model: %w", err)
	}
	f, err := decodeContainer(b)
	if err != nil {
		return nil, fmt.Errorf("read model %s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// ReadSections reads the model file at path like ReadFile, but keeps only
// the sections (after the header) whose name keep accepts, reading only
// them: a rank that scores with a part of a model needs memory for that
// part alone, not for the file. The header, the kept sections' checksums,
// the structure of the section table and the end marker are verified; the
// final checksum, which covers every byte, is not, as that would mean
// reading the whole file.
func ReadSections(path string, keep func(name string) bool) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read model: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("read model: %w", err)
	}
	f, err := decode(&windowReader{f: fh, len: st.Size()}, keep)
	if err != nil {
		return nil, fmt.Errorf("read model %s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// source is where a model file's bytes are decoded from: the whole file in
// memory (ReadFile) or an open file read piece by piece (ReadSections).
type source interface {
	// size returns the file's length.
	size() int64
	// peek returns n bytes at off, or io.ErrUnexpectedEOF past the end;
	// they may be overwritten by the next call.
	peek(off int64, n int) ([]byte, error)
	// payload returns n bytes at off, which the caller keeps.
	payload(off int64, n int) ([]byte, error)
}

// memSource is a file held whole in memory; what it returns aliases it.
type memSource []byte

func (m memSource) size() int64 { return int64(len(m)) }

func (m memSource) peek(off int64, n int) ([]byte, error) {
	if off < 0 || int64(n) > int64(len(m))-off {
		return nil, io.ErrUnexpectedEOF
	}
	return m[off : off+int64(n) : off+int64(n)], nil
}

func (m memSource) payload(off int64, n int) ([]byte, error) { return m.peek(off, n) }

// windowReader reads small pieces of a file at increasing offsets through
// a window it refills with one ReadAt, and large pieces directly, so that
// walking a section table costs a system call per window, not per field.
type windowReader struct {
	f          *os.File
	len        int64
	buf        []byte
	start, end int64 // the file bytes buf holds
}

// window is the bytes windowReader reads at once.
const window = 64 << 10

func (r *windowReader) size() int64 { return r.len }

func (r *windowReader) peek(off int64, n int) ([]byte, error) {
	if off < 0 || int64(n) > r.len-off {
		return nil, io.ErrUnexpectedEOF
	}
	if off >= r.start && off+int64(n) <= r.end {
		return r.buf[off-r.start : off-r.start+int64(n)], nil
	}
	if n > window {
		return r.payload(off, n)
	}
	if r.buf == nil {
		r.buf = make([]byte, window)
	}
	m, err := r.f.ReadAt(r.buf[:min(window, r.len-off)], off)
	if m < n {
		return nil, err
	}
	r.start, r.end = off, off+int64(m)
	return r.buf[:n], nil
}

// payload reads a large piece straight into its own memory, and copies a
// small one out of the window.
func (r *windowReader) payload(off int64, n int) ([]byte, error) {
	if n <= window {
		b, err := r.peek(off, n)
		return bytes.Clone(b), err
	}
	if off < 0 || int64(n) > r.len-off {
		return nil, io.ErrUnexpectedEOF
	}
	b := make([]byte, n)
	if _, err := r.f.ReadAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}

// decodeContainer parses a whole model file held in b, verifying every
// checksum. Every length is checked against the bytes left before use, so
// garbage input yields an error, never a panic or a huge allocation.
func decodeContainer(b []byte) (*File, error) { return decode(memSource(b), nil) }

// decode parses the model file in src. With keep nil it reads and verifies
// every section and the final checksum, which covers every byte; otherwise
// it reads and verifies only the header and the sections keep accepts,
// skipping the others' payloads, and not the final checksum, which would
// mean reading them. The section table's structure and the end marker are
// checked either way.
func decode(src source, keep func(name string) bool) (*File, error) {
	pos, err := decodeStart(src)
	if err != nil {
		return nil, err
	}
	t := &tableDecoder{src: src, keep: keep, f: &File{index: map[string]int{}}, seen: map[string]bool{}}
	for {
		more, err := t.next(&pos)
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
	}
	if err := t.end(pos); err != nil {
		return nil, err
	}
	if h := t.f.Header; h.Algorithm == "" || h.D < 0 || h.L < 0 {
		return nil, fmt.Errorf("%w: header: algorithm %q, D=%d, L=%d", ErrCorrupt, h.Algorithm, h.D, h.L)
	}
	return t.f, nil
}

// decodeStart checks the magic and the format version at the start of src
// and returns the offset of the first section.
func decodeStart(src source) (int64, error) {
	size := src.size()
	if size < int64(len(Magic)) {
		head, _ := src.peek(0, int(size))
		if bytes.HasPrefix([]byte(Magic), head) {
			return 0, fmt.Errorf("%w: %d bytes, shorter than the magic", ErrTruncated, size)
		}
		return 0, ErrNotModel
	}
	if b, err := src.peek(0, len(Magic)); err != nil || string(b) != Magic {
		return 0, ErrNotModel
	}
	pos := int64(len(Magic))
	b, err := src.peek(pos, 4)
	if err != nil {
		return 0, fmt.Errorf("%w: file ends inside the format version", ErrTruncated)
	}
	switch v := binary.LittleEndian.Uint32(b); {
	case v > FormatVersion:
		return 0, fmt.Errorf("%w: model format version %d is newer than this xmc supports (%d): upgrade xmc", ErrVersion, v, FormatVersion)
	case v == 0:
		return 0, fmt.Errorf("%w: format version 0", ErrCorrupt)
	}
	return pos + 4, nil
}

// tableDecoder walks a model file's section table, reading the sections
// it keeps into f.
type tableDecoder struct {
	src   source
	keep  func(name string) bool
	f     *File
	seen  map[string]bool
	count int    // sections read
	last  string // the last one's name
}

// after names the place of a truncation for error messages.
func (t *tableDecoder) after() string {
	if t.count == 0 {
		return "before the header section"
	}
	return fmt.Sprintf("after section %q", t.last)
}

// next reads the section table's entry at *pos, and the section's payload
// if it is kept, and moves *pos past it; it reports false at the end
// marker's zero name length, *pos then after it.
func (t *tableDecoder) next(pos *int64) (bool, error) {
	le := binary.LittleEndian
	b, err := t.src.peek(*pos, 2)
	if err != nil {
		return false, fmt.Errorf("%w: file ends %s, end marker missing", ErrTruncated, t.after())
	}
	n := int(le.Uint16(b))
	*pos += 2
	if n == 0 {
		return false, nil
	}
	if b, err = t.src.peek(*pos, n); err != nil {
		return false, fmt.Errorf("%w: file ends inside a section name %s", ErrTruncated, t.after())
	}
	name := string(b)
	*pos += int64(n)
	if err := checkSectionName(name); err != nil {
		return false, fmt.Errorf("%w: %s: %v", ErrCorrupt, t.after(), err)
	}
	if b, err = t.src.peek(*pos, 12); err != nil {
		return false, fmt.Errorf("%w: file ends inside the length of section %q", ErrTruncated, name)
	}
	length, sum := le.Uint64(b), le.Uint32(b[8:])
	*pos += 12
	if left := uint64(t.src.size() - *pos); length > left {
		return false, fmt.Errorf("%w: section %q: expected %d bytes, got %d", ErrTruncated, name, length, left)
	}
	if t.seen[name] || (t.count > 0 && name == HeaderSection) {
		return false, fmt.Errorf("%w: duplicate section %q", ErrCorrupt, name)
	}
	if t.count == 0 || t.keep == nil || t.keep(name) {
		if err := t.read(name, *pos, int(length), sum); err != nil {
			return false, err
		}
	}
	t.seen[name] = true
	*pos += int64(length)
	t.count++
	t.last = name
	return true, nil
}

// read reads and verifies the payload of section name, length bytes at
// off whose CRC-32C is sum: the header, or a section kept.
func (t *tableDecoder) read(name string, off int64, length int, sum uint32) error {
	data, err := t.src.payload(off, length)
	if err != nil {
		return fmt.Errorf("%w: section %q: %v", ErrTruncated, name, err)
	}
	if got := checksum.Sum(data); got != sum {
		return fmt.Errorf("%w in section %q: stored %08x, computed %08x", ErrChecksum, name, sum, got)
	}
	if t.count > 0 {
		t.f.index[name] = len(t.f.Sections)
		t.f.Sections = append(t.f.Sections, Section{Name: name, Data: data})
		return nil
	}
	if name != HeaderSection {
		return fmt.Errorf("%w: first section is %q, expected %q", ErrCorrupt, name, HeaderSection)
	}
	if err := json.Unmarshal(data, &t.f.Header); err != nil {
		return fmt.Errorf("%w: header section: %v", ErrCorrupt, err)
	}
	return nil
}

// end checks the end marker at pos, after the table's zero name length:
// the section count, the final checksum when every section was read, and
// that nothing follows.
func (t *tableDecoder) end(pos int64) error {
	le := binary.LittleEndian
	b, err := t.src.peek(pos, 8)
	if err != nil {
		return fmt.Errorf("%w: file ends inside the end marker", ErrTruncated)
	}
	stored, sum := le.Uint32(b), le.Uint32(b[4:]) // b may not outlive the next read
	if stored != uint32(t.count) {
		return fmt.Errorf("%w: end marker records %d sections, file has %d", ErrCorrupt, stored, t.count)
	}
	if t.keep == nil {
		whole, err := t.src.payload(0, int(pos+4))
		if err != nil {
			return fmt.Errorf("%w: %v", ErrTruncated, err)
		}
		if got := checksum.Sum(whole); got != sum {
			return fmt.Errorf("%w in section table (names and lengths): stored %08x, computed %08x", ErrChecksum, sum, got)
		}
	}
	pos += 8
	if size := t.src.size(); pos != size {
		return fmt.Errorf("%w: %d bytes after the end marker", ErrCorrupt, size-pos)
	}
	if t.count == 0 {
		return fmt.Errorf("%w: no header section", ErrCorrupt)
	}
	return nil
}
