// Package model holds trained xmc models and everything needed to judge
// them: the versioned container file every model is stored in, sharded
// models described by a manifest, the standard XMC score file of
// predictions, and the evaluation metrics of the field (P@k, nDCG@k, their
// propensity-scored variants, R@k, and accuracy and macro-F1 for
// multi-class data).
//
// # Container format
//
// A model file is a sequence of named, checksummed sections, so that a
// reader can find what it needs and tell exactly which part of a damaged
// file is bad. All integers are little-endian.
//
//	magic    "XMCMODEL" (8 bytes)
//	version  uint32, currently 1
//	section  repeated, the first named "header":
//	    name length  uint16, 1..255
//	    name         printable ASCII, no spaces
//	    length       uint64, payload bytes
//	    crc          uint32, CRC-32C (Castagnoli) of the payload
//	    payload
//	end      uint16 0 (a zero name length marks the end)
//	count    uint32, number of sections including the header
//	crc      uint32, CRC-32C of every byte of the file before this field
//
// The header payload is the JSON encoding of [Header]. The final checksum
// covers the section names and lengths, which the per-section checksums do
// not, so every single-byte corruption is detected. The file holds no
// timestamps or host names: two runs with the same seed write identical
// bytes.
package model

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"xmc/atomicfile"
	"xmc/checksum"
)

// FormatVersion is the container format version this package writes and the
// newest it reads.
const FormatVersion uint32 = 1

// Magic starts every model file.
const Magic = "XMCMODEL"

// HeaderSection is the reserved name of the first section, which holds the
// JSON-encoded [Header].
const HeaderSection = "header"

// maxNameLen bounds section names so that a name always fits the uint16
// length field and error messages stay short.
const maxNameLen = 255

// Errors wrapped by [ReadFile], [ReadShard] and [ReadManifest], so that
// callers can tell kinds of damage apart with errors.Is.
var (
	// ErrNotModel means the file does not start with [Magic].
	ErrNotModel = errors.New("not an xmc model (bad magic)")
	// ErrTruncated means the file ends before its end marker.
	ErrTruncated = errors.New("truncated")
	// ErrChecksum means a stored CRC-32C does not match the bytes.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrVersion means the file was written by a newer xmc.
	ErrVersion = errors.New("unsupported model format version")
	// ErrCorrupt means the structure is invalid in some other way.
	ErrCorrupt = errors.New("corrupt model")
)

// Header describes a model: which algorithm produced it, its dimensions and
// the hyper-parameters needed to reproduce or continue it.
type Header struct {
	// Algorithm names the trainer, for example "forest" or "dismec".
	Algorithm string `json:"algorithm"`
	// Kind names the kind of model (see Kind), for example "linear".
	// Headers of the first algorithms leave it empty: their algorithm
	// says it (see KindOf).
	Kind string `json:"kind,omitempty"`
	// D is the number of features and L the number of labels of the
	// training data.
	D int `json:"d"`
	L int `json:"l"`
	// Seed is the random seed the model was trained with.
	Seed uint64 `json:"seed"`
	// Params holds the algorithm's hyper-parameters as a JSON object.
	Params json.RawMessage `json:"params,omitempty"`
	// Counts holds sizes worth reporting without decoding the model, for
	// example "trees", "nodes" or "nnz".
	Counts map[string]int64 `json:"counts,omitempty"`
	// Shard is nil for a whole model and describes the part held by this
	// file for one shard of a sharded model.
	Shard *ShardInfo `json:"shard,omitempty"`
}

// ShardInfo says which part of a model a shard file holds. Models are
// sharded along one axis: a forest by trees, a one-vs-all model by labels.
type ShardInfo struct {
	// Rank is this shard's index (the MPI rank that wrote it) and Ranks the
	// number of shards of the model.
	Rank  int `json:"rank"`
	Ranks int `json:"ranks"`
	// Axis is what the model is split along: "trees" or "labels".
	Axis string `json:"axis"`
	// Lo, Hi and Stride say which ids of the axis are held here: Lo,
	// Lo+Stride, Lo+2·Stride, … below Hi. Stride 0 or 1 means the whole
	// half-open range [Lo, Hi); a forest whose trees were dealt to ranks
	// cyclically has Lo = rank and Stride = ranks.
	Lo     int64 `json:"lo"`
	Hi     int64 `json:"hi"`
	Stride int64 `json:"stride,omitempty"`
	// Units, when set, lists the ids held, all in [Lo, Hi): a model
	// trained under the dynamic schedule has them wherever a rank asked.
	Units []int64 `json:"units,omitempty"`
}

// Section is one named part of a model file.
type Section struct {
	Name string
	Data []byte
}

// File is a model file read into memory.
type File struct {
	// Path is the file it was read from, used in error messages.
	Path   string
	Header Header
	// Sections are the sections after the header, in file order. Their
	// Data alias one buffer holding the whole file.
	Sections []Section
	// index maps a section's name to its place in Sections.
	index map[string]int
}

// Section returns the payload of the section with the given name.
func (f *File) Section(name string) ([]byte, error) {
	if i, ok := f.index[name]; ok {
		return f.Sections[i].Data, nil
	}
	return nil, fmt.Errorf("model %s has no section %q", f.Path, name)
}

// checkSectionName reports whether name is a valid section name: 1 to 255
// bytes of printable ASCII without spaces, so that it prints unambiguously
// in errors.
func checkSectionName(name string) error {
	if len(name) == 0 || len(name) > maxNameLen {
		return fmt.Errorf("section name %q: length %d outside 1..%d", name, len(name), maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("section name %q: byte %d is not printable ASCII", name, i)
		}
	}
	return nil
}

// containerEncoder writes the container format to w, keeping the running
// CRC-32C and size of everything written so that the end marker can carry
// the checksum and a manifest can record it without rereading the file.
type containerEncoder struct {
	w     io.Writer
	crc   hash.Hash32
	size  int64
	names map[string]bool // sections written so far, header first
	count int             // their number
	sum   uint32          // the final checksum, once end has run
	err   error           // first write error; later writes are skipped
}

// newContainerEncoder returns an encoder that has written the magic and
// format version to w.
func newContainerEncoder(w io.Writer) *containerEncoder {
	e := &containerEncoder{w: w, crc: checksum.New(), names: map[string]bool{}}
	var b []byte
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint32(b, FormatVersion)
	e.write(b)
	return e
}

// write writes p and adds it to the running checksum and size, unless an
// earlier write failed.
func (e *containerEncoder) write(p []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(p)
	e.crc.Write(p[:n])
	e.size += int64(n)
	e.err = err
}

// header writes the header section.
func (e *containerEncoder) header(h Header) error {
	if h.Algorithm == "" {
		return errors.New("header: empty algorithm name")
	}
	if h.D < 0 || h.L < 0 {
		return fmt.Errorf("header: negative dimensions D=%d L=%d", h.D, h.L)
	}
	js, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("header: encode JSON: %w", err)
	}
	e.section(HeaderSection, js)
	return e.err
}

// section writes one section; the caller has checked the name.
func (e *containerEncoder) section(name string, data []byte) {
	var b []byte
	b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
	b = append(b, name...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
	b = binary.LittleEndian.AppendUint32(b, checksum.Sum(data))
	e.write(b)
	e.write(data)
	e.names[name] = true
	e.count++
}

// end writes the end marker and records the file's fingerprint.
func (e *containerEncoder) end() error {
	var b []byte
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(e.count))
	e.write(b)
	e.sum = e.crc.Sum32()
	e.write(binary.LittleEndian.AppendUint32(nil, e.sum))
	return e.err
}

// Writer writes a model file section by section, so that a model larger
// than memory can be saved one part at a time. Nothing is visible at the
// destination path until [Writer.Commit] succeeds. The usual pattern is
//
//	w, err := model.Create(path, h)
//	if err != nil { return err }
//	defer w.Abort()
//	for ... { if err := w.AddSection(name, data); err != nil { return err } }
//	return w.Commit()
type Writer struct {
	path    string
	file    *atomicfile.File
	buf     *bufio.Writer
	enc     *containerEncoder
	flushed bool // end marker written, nothing buffered
	done    bool // committed or aborted
}

// Create starts writing a model with header h to a temporary file in the
// directory of path.
func Create(path string, h Header) (*Writer, error) {
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create model %s: %w", path, err)
	}
	w := &Writer{path: path, file: f, buf: bufio.NewWriterSize(f, 1<<20)}
	w.enc = newContainerEncoder(w.buf)
	if err := w.enc.header(h); err != nil {
		w.Abort()
		return nil, fmt.Errorf("create model %s: %w", path, err)
	}
	return w, nil
}

// AddSection appends a section. Names must be unique within the file,
// 1 to 255 bytes of printable ASCII, and not "header".
func (w *Writer) AddSection(name string, data []byte) error {
	if w.done {
		return fmt.Errorf("write model %s: section %q added after Commit or Abort", w.path, name)
	}
	if err := checkSectionName(name); err != nil {
		return fmt.Errorf("write model %s: %w", w.path, err)
	}
	if w.flushed {
		return fmt.Errorf("write model %s: section %q added after Flush", w.path, name)
	}
	if w.enc.names[name] {
		return fmt.Errorf("write model %s: duplicate section %q", w.path, name)
	}
	w.enc.section(name, data)
	if w.enc.err != nil {
		return fmt.Errorf("write model %s: section %q: %w", w.path, name, w.enc.err)
	}
	return nil
}

// Flush writes the end marker and every buffered byte to the temporary
// file; no section can be added after it. What Commit then does is make the
// file durable and visible, mostly waiting for the disk (42 of the 70 ms
// of writing a 51 MiB forest on the development VM), which a caller may
// overlap with other work. On error the temporary file is removed.
func (w *Writer) Flush() error {
	if w.done {
		return fmt.Errorf("write model %s: Flush after Commit or Abort", w.path)
	}
	if w.flushed {
		return nil
	}
	err := w.enc.end()
	if err == nil {
		err = w.buf.Flush()
	}
	if err != nil {
		w.Abort()
		return fmt.Errorf("write model %s: %w", w.path, err)
	}
	w.flushed = true
	return nil
}

// Commit flushes the file (see Flush), fsyncs it, renames it to the
// destination path and fsyncs the directory, so that after a crash the
// path holds either the old file or the complete new one. On error the
// temporary file is removed.
func (w *Writer) Commit() error {
	if w.done {
		return fmt.Errorf("write model %s: Commit after Commit or Abort", w.path)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := w.file.Commit(); err != nil {
		w.Abort()
		return fmt.Errorf("write model %s: %w", w.path, err)
	}
	w.done = true
	return nil
}

// Abort discards the temporary file. It does nothing after Commit, so it
// can be deferred.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.file.Abort()
}

// Bytes returns the size of the file written so far; after Commit it is the
// size of the whole file, as recorded in a [ShardRef].
func (w *Writer) Bytes() int64 { return w.enc.size }

// CRC32C returns, after Commit, the file's final checksum (the CRC-32C of
// every byte before it, stored in its last four bytes), as recorded in a
// [ShardRef]; before Commit it returns 0.
func (w *Writer) CRC32C() uint32 { return w.enc.sum }

// WriteFile atomically writes a model with header h and the given sections
// to path: an existing file at path is replaced only if the whole write
// succeeds.
func WriteFile(path string, h Header, sections []Section) error {
	w, err := Create(path, h)
	if err != nil {
		return err
	}
	defer w.Abort()
	for _, s := range sections {
		if err := w.AddSection(s.Name, s.Data); err != nil {
			return err
		}
	}
	return w.Commit()
}

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
	le := binary.LittleEndian
	size := src.size()
	if size < int64(len(Magic)) {
		head, _ := src.peek(0, int(size))
		if bytes.HasPrefix([]byte(Magic), head) {
			return nil, fmt.Errorf("%w: %d bytes, shorter than the magic", ErrTruncated, size)
		}
		return nil, ErrNotModel
	}
	if b, err := src.peek(0, len(Magic)); err != nil || string(b) != Magic {
		return nil, ErrNotModel
	}
	pos := int64(len(Magic))
	b, err := src.peek(pos, 4)
	if err != nil {
		return nil, fmt.Errorf("%w: file ends inside the format version", ErrTruncated)
	}
	switch v := le.Uint32(b); {
	case v > FormatVersion:
		return nil, fmt.Errorf("%w: model format version %d is newer than this xmc supports (%d): upgrade xmc", ErrVersion, v, FormatVersion)
	case v == 0:
		return nil, fmt.Errorf("%w: format version 0", ErrCorrupt)
	}
	pos += 4

	f := &File{index: map[string]int{}}
	seen := map[string]bool{}
	count, last := 0, "" // sections read, and the last one's name
	// after names the place of a truncation for error messages.
	after := func() string {
		if count == 0 {
			return "before the header section"
		}
		return fmt.Sprintf("after section %q", last)
	}
	for {
		b, err := src.peek(pos, 2)
		if err != nil {
			return nil, fmt.Errorf("%w: file ends %s, end marker missing", ErrTruncated, after())
		}
		n := int(le.Uint16(b))
		pos += 2
		if n == 0 {
			break
		}
		if b, err = src.peek(pos, n); err != nil {
			return nil, fmt.Errorf("%w: file ends inside a section name %s", ErrTruncated, after())
		}
		name := string(b)
		pos += int64(n)
		if err := checkSectionName(name); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, after(), err)
		}
		if b, err = src.peek(pos, 12); err != nil {
			return nil, fmt.Errorf("%w: file ends inside the length of section %q", ErrTruncated, name)
		}
		length, sum := le.Uint64(b), le.Uint32(b[8:])
		pos += 12
		if left := uint64(size - pos); length > left {
			return nil, fmt.Errorf("%w: section %q: expected %d bytes, got %d", ErrTruncated, name, length, left)
		}
		if count == 0 || keep == nil || keep(name) {
			data, err := src.payload(pos, int(length))
			if err != nil {
				return nil, fmt.Errorf("%w: section %q: %v", ErrTruncated, name, err)
			}
			if got := checksum.Sum(data); got != sum {
				return nil, fmt.Errorf("%w in section %q: stored %08x, computed %08x", ErrChecksum, name, sum, got)
			}
			if seen[name] || (count > 0 && name == HeaderSection) {
				return nil, fmt.Errorf("%w: duplicate section %q", ErrCorrupt, name)
			}
			if count == 0 {
				if name != HeaderSection {
					return nil, fmt.Errorf("%w: first section is %q, expected %q", ErrCorrupt, name, HeaderSection)
				}
				if err := json.Unmarshal(data, &f.Header); err != nil {
					return nil, fmt.Errorf("%w: header section: %v", ErrCorrupt, err)
				}
			} else {
				f.index[name] = len(f.Sections)
				f.Sections = append(f.Sections, Section{Name: name, Data: data})
			}
		} else if seen[name] || name == HeaderSection {
			return nil, fmt.Errorf("%w: duplicate section %q", ErrCorrupt, name)
		}
		seen[name] = true
		pos += int64(length)
		count++
		last = name
	}
	b, err = src.peek(pos, 8)
	if err != nil {
		return nil, fmt.Errorf("%w: file ends inside the end marker", ErrTruncated)
	}
	stored, sum := le.Uint32(b), le.Uint32(b[4:]) // b may not outlive the next read
	if stored != uint32(count) {
		return nil, fmt.Errorf("%w: end marker records %d sections, file has %d", ErrCorrupt, stored, count)
	}
	if keep == nil {
		whole, err := src.payload(0, int(pos+4))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTruncated, err)
		}
		if got := checksum.Sum(whole); got != sum {
			return nil, fmt.Errorf("%w in section table (names and lengths): stored %08x, computed %08x", ErrChecksum, sum, got)
		}
	}
	pos += 8
	if pos != size {
		return nil, fmt.Errorf("%w: %d bytes after the end marker", ErrCorrupt, size-pos)
	}
	if count == 0 {
		return nil, fmt.Errorf("%w: no header section", ErrCorrupt)
	}
	if h := f.Header; h.Algorithm == "" || h.D < 0 || h.L < 0 {
		return nil, fmt.Errorf("%w: header: algorithm %q, D=%d, L=%d", ErrCorrupt, h.Algorithm, h.D, h.L)
	}
	return f, nil
}

// ManifestFormat identifies a manifest's JSON; ManifestVersion is the
// manifest version this package writes and the newest it reads.
const (
	ManifestFormat         = "xmc-manifest"
	ManifestVersion uint32 = 1
)

// Manifest describes a sharded model: one model file per MPI rank, each
// holding part of the model, tied together by a small JSON file that
// records the shards' sizes and checksums so a missing or stale shard is
// caught before it is used.
type Manifest struct {
	// Header describes the whole model; its Shard is nil.
	Header Header
	// Shards lists one file per rank, ranks 0..len(Shards)-1 each once.
	Shards []ShardRef
}

// ShardRef locates and fingerprints one shard file.
type ShardRef struct {
	// Path is relative to the manifest's directory, so a model directory
	// can be moved or copied as a whole.
	Path string `json:"path"`
	// Rank is the shard's index.
	Rank int `json:"rank"`
	// Bytes is the size of the shard file and CRC32C its final checksum:
	// the CRC-32C of all its bytes but the last four, which store it (see
	// [Writer.Bytes] and [Writer.CRC32C]). A CRC over a whole file that
	// ends with its own CRC is the same constant for every such file, so
	// the whole-file value would not tell shards apart.
	Bytes  int64  `json:"bytes"`
	CRC32C uint32 `json:"crc32c"`
}

// manifestJSON is the on-disk form of a Manifest: the format name and
// version first, so a reader can reject what it does not understand.
type manifestJSON struct {
	Format  string     `json:"format"`
	Version uint32     `json:"version"`
	Header  Header     `json:"header"`
	Shards  []ShardRef `json:"shards"`
}

// WriteManifest atomically writes m to path as indented JSON, after
// checking it as [ReadManifest] would.
func WriteManifest(path string, m *Manifest) error {
	if err := checkManifest(m); err != nil {
		return fmt.Errorf("write manifest %s: %w", path, err)
	}
	js, err := json.MarshalIndent(manifestJSON{
		Format:  ManifestFormat,
		Version: ManifestVersion,
		Header:  m.Header,
		Shards:  m.Shards,
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("write manifest %s: %w", path, err)
	}
	js = append(js, '\n')
	if err := atomicfile.WriteBytes(path, js); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}

// ReadManifest reads and checks the manifest at path. It does not open the
// shards; [ReadShard] does, verifying each against its ShardRef.
func ReadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var mj manifestJSON
	if err := json.Unmarshal(b, &mj); err != nil {
		return nil, fmt.Errorf("read manifest %s: %w: %v", path, ErrCorrupt, err)
	}
	if mj.Format != ManifestFormat {
		return nil, fmt.Errorf("read manifest %s: %w: format %q, expected %q", path, ErrCorrupt, mj.Format, ManifestFormat)
	}
	if mj.Version > ManifestVersion {
		return nil, fmt.Errorf("read manifest %s: %w: manifest version %d is newer than this xmc supports (%d): upgrade xmc", path, ErrVersion, mj.Version, ManifestVersion)
	}
	// The indented JSON re-indents Params; compact them back to the form
	// model file headers hold.
	if len(mj.Header.Params) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, mj.Header.Params); err != nil {
			return nil, fmt.Errorf("read manifest %s: %w: params: %v", path, ErrCorrupt, err)
		}
		mj.Header.Params = c.Bytes()
	}
	m := &Manifest{Header: mj.Header, Shards: mj.Shards}
	if err := checkManifest(m); err != nil {
		return nil, fmt.Errorf("read manifest %s: %w: %v", path, ErrCorrupt, err)
	}
	return m, nil
}

// checkManifest checks the invariants readers rely on: a valid header, at
// least one shard, ranks 0..n-1 each exactly once, and relative paths that
// stay inside the manifest's directory.
func checkManifest(m *Manifest) error {
	h := m.Header
	if h.Algorithm == "" || h.D < 0 || h.L < 0 {
		return fmt.Errorf("header: algorithm %q, D=%d, L=%d", h.Algorithm, h.D, h.L)
	}
	if h.Shard != nil {
		return errors.New("header of a whole model has shard information")
	}
	if len(m.Shards) == 0 {
		return errors.New("no shards")
	}
	seen := make([]bool, len(m.Shards))
	for i, s := range m.Shards {
		if s.Rank < 0 || s.Rank >= len(m.Shards) {
			return fmt.Errorf("shard %d: rank %d outside 0..%d", i, s.Rank, len(m.Shards)-1)
		}
		if seen[s.Rank] {
			return fmt.Errorf("shard %d: rank %d listed twice", i, s.Rank)
		}
		seen[s.Rank] = true
		if !filepath.IsLocal(s.Path) {
			return fmt.Errorf("shard %d: path %q is not a relative path inside the manifest's directory", i, s.Path)
		}
		if s.Bytes < 0 {
			return fmt.Errorf("shard %d: negative size %d", i, s.Bytes)
		}
	}
	return nil
}

// ReadShard reads the shard ref of the manifest at manifestPath, checks
// its size and whole-file CRC-32C against the manifest, then decodes it as
// [ReadFile] does and checks that its header names the same rank. With
// keep set it reads only the sections keep accepts, as [ReadSections]
// does, and checks the shard's size but not its whole-file checksum.
func ReadShard(manifestPath string, ref ShardRef, keep func(name string) bool) (*File, error) {
	path := filepath.Join(filepath.Dir(manifestPath), ref.Path)
	if keep != nil {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("read shard %d of %s: %w", ref.Rank, manifestPath, err)
		}
		if st.Size() != ref.Bytes {
			return nil, fmt.Errorf("read shard %d %s: %w: %d bytes, manifest %s says %d", ref.Rank, path, ErrTruncated, st.Size(), manifestPath, ref.Bytes)
		}
		f, err := ReadSections(path, keep)
		if err != nil {
			return nil, fmt.Errorf("read shard %d: %w", ref.Rank, err)
		}
		return f, checkShardHeader(f, ref)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read shard %d of %s: %w", ref.Rank, manifestPath, err)
	}
	if int64(len(b)) != ref.Bytes {
		return nil, fmt.Errorf("read shard %d %s: %w: %d bytes, manifest %s says %d", ref.Rank, path, ErrTruncated, len(b), manifestPath, ref.Bytes)
	}
	if got := checksum.Sum(b[:max(0, len(b)-4)]); got != ref.CRC32C {
		return nil, fmt.Errorf("read shard %d %s: %w: CRC-32C %08x, manifest %s says %08x", ref.Rank, path, ErrChecksum, got, manifestPath, ref.CRC32C)
	}
	f, err := decodeContainer(b)
	if err != nil {
		return nil, fmt.Errorf("read shard %d %s: %w", ref.Rank, path, err)
	}
	f.Path = path
	return f, checkShardHeader(f, ref)
}

// checkShardHeader reports an error unless f's header describes shard ref.
func checkShardHeader(f *File, ref ShardRef) error {
	if s := f.Header.Shard; s == nil || s.Rank != ref.Rank {
		return fmt.Errorf("read shard %d %s: %w: file header does not describe shard %d", ref.Rank, f.Path, ErrCorrupt, ref.Rank)
	}
	return nil
}

// IsManifest reports whether the file at path is a manifest (JSON, starting
// with '{') rather than a model file (starting with [Magic]), so that
// commands can accept either. Anything else is an error wrapping
// [ErrNotModel].
func IsManifest(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("open model: %w", err)
	}
	defer f.Close()
	head := make([]byte, len(Magic))
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return false, fmt.Errorf("read model %s: %w", path, err)
	}
	head = head[:n]
	switch {
	case n > 0 && head[0] == '{':
		return true, nil
	case n > 0 && bytes.HasPrefix([]byte(Magic), head):
		return false, nil
	}
	return false, fmt.Errorf("read model %s: %w, nor a manifest", path, ErrNotModel)
}

// ReadHeader reads only the header of the model file or manifest at path,
// so that a command can pick the loader for the model's algorithm without
// reading the whole model. The header's checksum is verified.
func ReadHeader(path string) (Header, error) {
	if ok, err := IsManifest(path); err != nil {
		return Header{}, err
	} else if ok {
		m, err := ReadManifest(path)
		if err != nil {
			return Header{}, err
		}
		return m.Header, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	le := binary.LittleEndian
	fixed := make([]byte, len(Magic)+4+2)
	if _, err := io.ReadFull(r, fixed); err != nil {
		return Header{}, fmt.Errorf("read model %s: %w", path, ErrNotModel)
	}
	if string(fixed[:len(Magic)]) != Magic {
		return Header{}, fmt.Errorf("read model %s: %w", path, ErrNotModel)
	}
	if v := le.Uint32(fixed[len(Magic):]); v > FormatVersion || v == 0 {
		return Header{}, fmt.Errorf("read model %s: %w: model format version %d (this xmc supports %d)", path, ErrVersion, v, FormatVersion)
	}
	name := make([]byte, le.Uint16(fixed[len(Magic)+4:]))
	meta := make([]byte, 12)
	if _, err := io.ReadFull(r, name); err != nil || string(name) != HeaderSection {
		return Header{}, fmt.Errorf("read model %s: %w: no header section first", path, ErrCorrupt)
	}
	if _, err := io.ReadFull(r, meta); err != nil {
		return Header{}, fmt.Errorf("read model %s: %w: header", path, ErrTruncated)
	}
	n := le.Uint64(meta)
	if n > 1<<24 {
		return Header{}, fmt.Errorf("read model %s: %w: header of %d bytes", path, ErrCorrupt, n)
	}
	js := make([]byte, n)
	if _, err := io.ReadFull(r, js); err != nil {
		return Header{}, fmt.Errorf("read model %s: %w: header", path, ErrTruncated)
	}
	if checksum.Sum(js) != le.Uint32(meta[8:]) {
		return Header{}, fmt.Errorf("read model %s: %w in section %q", path, ErrChecksum, HeaderSection)
	}
	var h Header
	if err := json.Unmarshal(js, &h); err != nil {
		return Header{}, fmt.Errorf("read model %s: %w: header: %v", path, ErrCorrupt, err)
	}
	return h, nil
}
