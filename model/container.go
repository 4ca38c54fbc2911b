package model

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

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
