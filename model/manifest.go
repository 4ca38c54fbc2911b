package model

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"xmc/atomicfile"
	"xmc/checksum"
)

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

// readParts calls fn on every file holding part of the model at path: the
// file itself, or each shard of a manifest (checked against the manifest's
// sizes and checksums), one at a time so that only one shard is in memory
// at once. With keep set only the sections it accepts are read (see
// ReadSections); without it every byte is read and verified. It returns
// the header of the whole model, and checks that every shard has that
// header's algorithm and dimensions.
func readParts(path string, keep func(name string) bool, fn func(f *File, whole Header) error) (Header, error) {
	isManifest, err := IsManifest(path)
	if err != nil {
		return Header{}, err
	}
	if !isManifest {
		var f *File
		if keep == nil {
			f, err = ReadFile(path)
		} else {
			f, err = ReadSections(path, keep)
		}
		if err != nil {
			return Header{}, err
		}
		return f.Header, fn(f, f.Header)
	}
	m, err := ReadManifest(path)
	if err != nil {
		return Header{}, err
	}
	h := m.Header
	for _, ref := range m.Shards {
		f, err := ReadShard(path, ref, keep)
		if err != nil {
			return Header{}, err
		}
		if f.Header.Algorithm != h.Algorithm || f.Header.D != h.D || f.Header.L != h.L {
			return Header{}, fmt.Errorf("%s: shard is %s D=%d L=%d but the model is %s D=%d L=%d",
				f.Path, f.Header.Algorithm, f.Header.D, f.Header.L, h.Algorithm, h.D, h.L)
		}
		if err := fn(f, h); err != nil {
			return Header{}, err
		}
	}
	return h, nil
}
