package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"xmc/checksum"
)

// testHeader and testSections make a small model with every header field
// set.
func testHeader() Header {
	return Header{
		Algorithm: "craftml",
		D:         1836,
		L:         159,
		Seed:      1<<63 + 12345, // beyond float64 precision: must survive JSON
		Params:    json.RawMessage(`{"trees":50,"leaf_size":10}`),
		Counts:    map[string]int64{"trees": 50, "nodes": 123456, "nnz": 7},
	}
}

func testSections() []Section {
	return []Section{
		{"tree/0", []byte("first tree payload")},
		{"tree/1", bytes.Repeat([]byte{0xab, 0x00, 0xff}, 1000)},
		{"empty", []byte{}},
	}
}

// encodeModel encodes a model into memory, as WriteFile would to disk.
func encodeModel(t testing.TB, h Header, sections []Section) []byte {
	t.Helper()
	var b bytes.Buffer
	e := newContainerEncoder(&b)
	if err := e.header(h); err != nil {
		t.Fatal(err)
	}
	for _, s := range sections {
		e.section(s.Name, s.Data)
	}
	if err := e.end(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.xmc")
	h := testHeader()
	h.Shard = &ShardInfo{Rank: 1, Ranks: 4, Axis: "labels", Lo: 40, Hi: 80}
	if err := WriteFile(path, h, testSections()); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Header, h) {
		t.Errorf("header %+v, want %+v", f.Header, h)
	}
	if len(f.Sections) != len(testSections()) {
		t.Fatalf("%d sections, want %d", len(f.Sections), len(testSections()))
	}
	for i, s := range testSections() {
		if f.Sections[i].Name != s.Name || !bytes.Equal(f.Sections[i].Data, s.Data) {
			t.Errorf("section %d: %q (%d bytes), want %q (%d bytes)", i, f.Sections[i].Name, len(f.Sections[i].Data), s.Name, len(s.Data))
		}
		got, err := f.Section(s.Name)
		if err != nil || !bytes.Equal(got, s.Data) {
			t.Errorf("Section(%q): %d bytes, %v", s.Name, len(got), err)
		}
	}
	if _, err := f.Section("nope"); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("missing section: error %v, want one naming %s", err, path)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode(), err)
	}
	// The in-memory encoder produces exactly the bytes WriteFile wrote.
	disk, _ := os.ReadFile(path)
	if !bytes.Equal(disk, encodeModel(t, h, testSections())) {
		t.Error("file differs from the in-memory encoding")
	}
}

func TestWriteFileDeterministic(t *testing.T) {
	dir := t.TempDir()
	var files [2][]byte
	for i := range files {
		// A fresh map each time, filled in a different order: encoding/json
		// sorts keys, so the bytes must not depend on map iteration.
		h := testHeader()
		h.Counts = map[string]int64{}
		keys := []string{"a", "bb", "c", "dd", "e", "ff", "g", "hh"}
		if i == 1 {
			slices.Reverse(keys)
		}
		for _, k := range keys {
			h.Counts[k] = int64(len(k))
		}
		path := filepath.Join(dir, []string{"a.xmc", "b.xmc"}[i])
		if err := WriteFile(path, h, testSections()); err != nil {
			t.Fatal(err)
		}
		var err error
		if files[i], err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("two writes of the same model differ")
	}
}

// sectionOffsets returns the payload offset of each section of an encoded
// model, header first.
func sectionOffsets(t *testing.T, b []byte) map[string][2]int {
	t.Helper()
	offs := map[string][2]int{}
	pos := len(Magic) + 4
	for {
		n := int(binary.LittleEndian.Uint16(b[pos:]))
		if n == 0 {
			return offs
		}
		name := string(b[pos+2 : pos+2+n])
		size := int(binary.LittleEndian.Uint64(b[pos+2+n:]))
		pos += 2 + n + 12
		offs[name] = [2]int{pos, size}
		pos += size
	}
}

func TestReadFileCorruption(t *testing.T) {
	good := encodeModel(t, testHeader(), testSections())
	dir := t.TempDir()
	read := func(b []byte) error {
		path := filepath.Join(dir, "c.xmc")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFile(path)
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not name the file", err)
		}
		return err
	}

	t.Run("flip a payload byte of each section", func(t *testing.T) {
		for name, off := range sectionOffsets(t, good) {
			if off[1] == 0 {
				continue
			}
			b := bytes.Clone(good)
			b[off[0]+off[1]/2] ^= 0x10
			err := read(b)
			if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), `section "`+name+`"`) {
				t.Errorf("section %s: error %v, want a checksum mismatch naming it", name, err)
			}
		}
	})

	t.Run("every single-byte flip is detected", func(t *testing.T) {
		for i := range good {
			b := bytes.Clone(good)
			b[i] ^= 0x01
			if _, err := decodeContainer(b); err == nil {
				t.Fatalf("flip at offset %d of %d not detected", i, len(good))
			}
		}
	})

	t.Run("truncation", func(t *testing.T) {
		offs := sectionOffsets(t, good)
		tree1 := offs["tree/1"]
		tests := []struct {
			at   int
			want string
		}{
			{0, "truncated: 0 bytes"},
			{5, "truncated: 5 bytes"},
			{10, "inside the format version"},
			{12, "before the header section, end marker missing"},
			{tree1[0] + 100, `section "tree/1": expected 3000 bytes, got 100`},
			{len(good) - 10, `after section "empty", end marker missing`},
			{len(good) - 3, "inside the end marker"},
		}
		for _, tt := range tests {
			err := read(good[:tt.at])
			if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("cut at %d: error %v, want ErrTruncated containing %q", tt.at, err, tt.want)
			}
		}
		for at := range len(good) {
			if _, err := decodeContainer(good[:at]); err == nil {
				t.Fatalf("cut at %d of %d not detected", at, len(good))
			}
		}
	})

	t.Run("bad magic", func(t *testing.T) {
		for _, b := range [][]byte{[]byte("{\"format\":1}"), append([]byte("XMCMODEX"), good[8:]...), []byte("hello")} {
			if err := read(b); !errors.Is(err, ErrNotModel) || !strings.Contains(err.Error(), "not an xmc model") {
				t.Errorf("%.12q: error %v, want ErrNotModel", b, err)
			}
		}
	})

	t.Run("future version", func(t *testing.T) {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[8:], 7)
		err := read(b)
		want := "model format version 7 is newer than this xmc supports (1): upgrade xmc"
		if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	})

	t.Run("trailing data", func(t *testing.T) {
		if err := read(append(bytes.Clone(good), 0)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("error %v, want ErrCorrupt", err)
		}
	})

	t.Run("structure", func(t *testing.T) {
		// Well-checksummed files that break the rules.
		tests := []struct {
			name string
			b    []byte
			want string
		}{
			{"first section not header", rawModel([]Section{{"tree/0", []byte("x")}}), `first section is "tree/0"`},
			{"no sections", rawModel(nil), "no header section"},
			{"duplicate", rawModel([]Section{{HeaderSection, []byte(`{"algorithm":"x"}`)}, {"a", nil}, {"a", nil}}), `duplicate section "a"`},
			{"two headers", rawModel([]Section{{HeaderSection, []byte(`{"algorithm":"x"}`)}, {HeaderSection, nil}}), "duplicate section"},
			{"bad JSON", rawModel([]Section{{HeaderSection, []byte(`{"algorithm":`)}}), "header section"},
			{"no algorithm", rawModel([]Section{{HeaderSection, []byte(`{"d":3}`)}}), `algorithm ""`},
			{"negative L", rawModel([]Section{{HeaderSection, []byte(`{"algorithm":"x","l":-1}`)}}), "L=-1"},
			{"bad name", rawModel([]Section{{HeaderSection, []byte(`{"algorithm":"x"}`)}, {"a b", nil}}), "not printable ASCII"},
		}
		for _, tt := range tests {
			_, err := decodeContainer(tt.b)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: error %v, want ErrCorrupt containing %q", tt.name, err, tt.want)
			}
		}
	})
}

// rawModel encodes sections exactly as given, header included, bypassing
// the encoder's checks, so tests can build well-checksummed invalid files.
func rawModel(sections []Section) []byte {
	var b bytes.Buffer
	e := &containerEncoder{w: &b, crc: checksum.New(), names: map[string]bool{}}
	var head []byte
	head = append(head, Magic...)
	head = binary.LittleEndian.AppendUint32(head, FormatVersion)
	e.write(head)
	for _, s := range sections {
		e.section(s.Name, s.Data)
	}
	e.end()
	return b.Bytes()
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.xmc")
	if err := WriteFile(path, testHeader(), testSections()); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)

	bad := []struct {
		name     string
		h        Header
		sections []Section
		want     string
	}{
		{"duplicate section", testHeader(), append(testSections(), Section{"tree/0", nil}), `duplicate section "tree/0"`},
		{"reserved name", testHeader(), []Section{{HeaderSection, nil}}, "duplicate section"},
		{"empty name", testHeader(), []Section{{"ok", []byte("data")}, {"", nil}}, "length 0"},
		{"long name", testHeader(), []Section{{strings.Repeat("n", 256), nil}}, "length 256"},
		{"bad params", Header{Algorithm: "x", Params: json.RawMessage("{")}, nil, "encode JSON"},
		{"no algorithm", Header{}, nil, "empty algorithm"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteFile(path, tt.h, tt.sections)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming %s and containing %q", err, path, tt.want)
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, old) {
				t.Error("failed write changed the existing file")
			}
			if names := dirNames(t, dir); len(names) != 1 {
				t.Errorf("directory holds %v, want only m.xmc", names)
			}
		})
	}

	t.Run("rename fails", func(t *testing.T) {
		// A non-empty directory at the destination makes the final rename
		// fail after everything was written.
		target := filepath.Join(dir, "taken")
		if err := os.MkdirAll(filepath.Join(target, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(target, testHeader(), testSections()); err == nil {
			t.Fatal("write over a directory: no error")
		}
		if names := dirNames(t, dir); len(names) != 2 {
			t.Errorf("directory holds %v, want m.xmc and taken", names)
		}
	})

	t.Run("missing directory", func(t *testing.T) {
		if err := WriteFile(filepath.Join(dir, "no", "m.xmc"), testHeader(), nil); err == nil {
			t.Error("no error")
		}
	})
}

func TestWriterStreaming(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.xmc")
	w, err := Create(path, testHeader())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range testSections() {
		if err := w.AddSection(s.Name, s.Data); err != nil {
			t.Fatal(err)
		}
	}
	// Flush writes every byte but leaves the destination alone, and
	// closes the file to new sections.
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Errorf("second Flush: %v", err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".s.xmc.tmp-*")); len(tmp) != 1 {
		t.Fatalf("temporary files after Flush: %v", tmp)
	} else if st, err := os.Stat(tmp[0]); err != nil || st.Size() != w.Bytes() {
		t.Errorf("after Flush the temporary file has %v bytes (%v), want all %d", st.Size(), err, w.Bytes())
	}
	if err := w.AddSection("late", nil); err == nil {
		t.Error("AddSection after Flush: no error")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("destination visible before Commit: %v", err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	w.Abort() // no effect after Commit
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := checksum.Sum(b[:len(b)-4]); w.Bytes() != int64(len(b)) || w.CRC32C() != sum || binary.LittleEndian.Uint32(b[len(b)-4:]) != sum {
		t.Errorf("Bytes %d CRC32C %08x; file has %d bytes, CRC-32C before the last 4 bytes %08x", w.Bytes(), w.CRC32C(), len(b), sum)
	}
	if err := w.AddSection("late", nil); err == nil {
		t.Error("AddSection after Commit: no error")
	}
	if err := w.Commit(); err == nil {
		t.Error("second Commit: no error")
	}

	// Abort leaves nothing behind.
	w, err = Create(filepath.Join(dir, "aborted.xmc"), testHeader())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddSection("a", []byte("data")); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "s.xmc" {
		t.Errorf("after Abort the directory holds %v", names)
	}
}

// writeShardedModel writes a two-shard model and its manifest into dir.
func writeShardedModel(t *testing.T, dir string) (string, *Manifest) {
	t.Helper()
	m := &Manifest{Header: testHeader()}
	for rank := range 2 {
		h := testHeader()
		h.Shard = &ShardInfo{Rank: rank, Ranks: 2, Axis: "trees", Lo: int64(25 * rank), Hi: int64(25 * (rank + 1))}
		name := []string{"m.rank0.xmc", "m.rank1.xmc"}[rank]
		w, err := Create(filepath.Join(dir, name), h)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddSection("trees", bytes.Repeat([]byte{byte(rank)}, 100)); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		m.Shards = append(m.Shards, ShardRef{Path: name, Rank: rank, Bytes: w.Bytes(), CRC32C: w.CRC32C()})
	}
	path := filepath.Join(dir, "m.json")
	if err := WriteManifest(path, m); err != nil {
		t.Fatal(err)
	}
	return path, m
}

func TestManifest(t *testing.T) {
	dir := t.TempDir()
	path, m := writeShardedModel(t, dir)
	got, err := ReadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("manifest %+v, want %+v", got, m)
	}
	if m.Shards[0].CRC32C == m.Shards[1].CRC32C {
		t.Errorf("two different shards have the same fingerprint %08x", m.Shards[0].CRC32C)
	}
	for _, ref := range got.Shards {
		f, err := ReadShard(path, ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.Header.Shard.Rank != ref.Rank {
			t.Errorf("shard %d reads as rank %d", ref.Rank, f.Header.Shard.Rank)
		}
	}

	t.Run("IsManifest", func(t *testing.T) {
		write := func(name, content string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		tests := []struct {
			path    string
			want    bool
			wantErr bool
		}{
			{path, true, false},
			{filepath.Join(dir, "m.rank0.xmc"), false, false},
			{write("short", "XMC"), false, false}, // ReadFile reports the truncation
			{write("text", "hello"), false, true},
			{write("empty", ""), false, true},
			{filepath.Join(dir, "missing"), false, true},
		}
		for _, tt := range tests {
			got, err := IsManifest(tt.path)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("%s: %v, %v; want %v, error %v", filepath.Base(tt.path), got, err, tt.want, tt.wantErr)
			}
		}
	})

	t.Run("stale shard", func(t *testing.T) {
		ref := got.Shards[1]
		ref.CRC32C ^= 1
		if _, err := ReadShard(path, ref, nil); !errors.Is(err, ErrChecksum) {
			t.Errorf("wrong CRC: error %v, want ErrChecksum", err)
		}
		ref = got.Shards[1]
		ref.Bytes++
		if _, err := ReadShard(path, ref, nil); !errors.Is(err, ErrTruncated) {
			t.Errorf("wrong size: error %v, want ErrTruncated", err)
		}
		// The right bytes for rank 0 listed as rank 1.
		ref = got.Shards[0]
		ref.Rank = 1
		if _, err := ReadShard(path, ref, nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("wrong rank: error %v, want ErrCorrupt", err)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		shard := func(p string, rank int) ShardRef { return ShardRef{Path: p, Rank: rank} }
		tests := []struct {
			name string
			m    Manifest
			want string
		}{
			{"no shards", Manifest{Header: testHeader()}, "no shards"},
			{"rank twice", Manifest{Header: testHeader(), Shards: []ShardRef{shard("a", 0), shard("b", 0)}}, "rank 0 listed twice"},
			{"rank out of range", Manifest{Header: testHeader(), Shards: []ShardRef{shard("a", 1)}}, "rank 1 outside"},
			{"absolute path", Manifest{Header: testHeader(), Shards: []ShardRef{shard("/etc/passwd", 0)}}, "not a relative path"},
			{"escaping path", Manifest{Header: testHeader(), Shards: []ShardRef{shard("../x", 0)}}, "not a relative path"},
			{"shard header", Manifest{Header: Header{Algorithm: "x", Shard: &ShardInfo{}}, Shards: []ShardRef{shard("a", 0)}}, "shard information"},
		}
		for _, tt := range tests {
			err := WriteManifest(filepath.Join(dir, "bad.json"), &tt.m)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "bad.json")); !os.IsNotExist(err) {
			t.Error("invalid manifest was written")
		}
	})

	t.Run("read errors", func(t *testing.T) {
		raw, _ := os.ReadFile(path)
		tests := []struct {
			name, content string
			want          error
		}{
			{"future version", strings.Replace(string(raw), `"version": 1`, `"version": 2`, 1), ErrVersion},
			{"other format", strings.Replace(string(raw), ManifestFormat, "something", 1), ErrCorrupt},
			{"not JSON", "{", ErrCorrupt},
			{"bad content", strings.Replace(string(raw), `"rank": 1`, `"rank": 0`, 1), ErrCorrupt},
		}
		for _, tt := range tests {
			p := filepath.Join(dir, "r.json")
			if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadManifest(p); !errors.Is(err, tt.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: error %v, want %v naming the file", tt.name, err, tt.want)
			}
		}
	})
}

// FuzzReadModel checks that no input panics the decoder, that whatever
// decodes re-encodes to a file that decodes to the same model, and that
// reading it from disk section by section (ReadSections, keeping every
// section) gives the same model.
func FuzzReadModel(f *testing.F) {
	good := encodeModel(f, testHeader(), testSections())
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(encodeModel(f, Header{Algorithm: "dismec"}, nil))
	f.Add([]byte(Magic))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeContainer(b)
		if err != nil {
			return
		}
		again, err := decodeContainer(encodeModel(t, m.Header, m.Sections))
		if err != nil {
			t.Fatalf("re-encoded model does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, m) {
			t.Fatalf("re-encoded model differs: %+v vs %+v", again, m)
		}
		path := filepath.Join(t.TempDir(), "m.xmc")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		read, err := ReadSections(path, func(string) bool { return true })
		if err != nil {
			t.Fatalf("ReadSections refuses what decodes whole: %v", err)
		}
		read.Path = ""
		if !reflect.DeepEqual(read, m) {
			t.Fatalf("ReadSections differs: %+v vs %+v", read, m)
		}
	})
}

// BenchmarkManySections writes and reads a model of 100,000 tiny sections,
// as many as the label blocks of a one-vs-all model of 1.6M labels: the
// cost of a section must not grow with the sections before it.
func BenchmarkManySections(b *testing.B) {
	const n = 100_000
	path := filepath.Join(b.TempDir(), "many.model")
	data := []byte{1, 2, 3}
	for b.Loop() {
		w, err := Create(path, testHeader())
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if err := w.AddSection(UnitSection("labels/", i), data); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Commit(); err != nil {
			b.Fatal(err)
		}
		f, err := ReadFile(path)
		if err != nil || len(f.Sections) != n {
			b.Fatal(err)
		}
	}
}

// TestReadSections checks partial reads: only the sections kept are
// returned (each in memory of its own), a damaged section that is not
// read goes unnoticed while a damaged one that is read is caught, and a
// damaged section table, header or end is caught either way.
func TestReadSections(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.xmc")
	big := bytes.Repeat([]byte{7}, 100<<10) // larger than the read window
	sections := append(testSections(), Section{"tree/2", big})
	if err := WriteFile(path, testHeader(), sections); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	keep := func(name string) bool { return name == "tree/1" || name == "tree/2" }
	f, err := ReadSections(path, keep)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Sections) != 2 || f.Sections[0].Name != "tree/1" || !bytes.Equal(f.Sections[1].Data, big) {
		t.Fatalf("kept %d sections: %v", len(f.Sections), f.Sections)
	}
	if !reflect.DeepEqual(f.Header, testHeader()) {
		t.Errorf("header %+v", f.Header)
	}
	if _, err := f.Section("tree/0"); err == nil {
		t.Error("a section not kept was found")
	}
	at := func(name string) int { return bytes.Index(good, []byte(name)) + len(name) + 12 }
	for _, c := range []struct {
		name    string
		damage  func(b []byte) []byte
		wantErr error // nil: the partial read succeeds
	}{
		{"skipped section", func(b []byte) []byte { b[at("tree/0")] ^= 1; return b }, nil},
		{"kept section", func(b []byte) []byte { b[at("tree/1")+5] ^= 1; return b }, ErrChecksum},
		{"header", func(b []byte) []byte { b[at(HeaderSection)+3] ^= 1; return b }, ErrChecksum},
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }, ErrTruncated},
		{"trailing bytes", func(b []byte) []byte { return append(b, 0) }, ErrCorrupt},
		{"section length", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[at("tree/2")-12:], 1<<40)
			return b
		}, ErrTruncated},
		{"not a model", func(b []byte) []byte { return []byte("hello world, not a model") }, ErrNotModel},
	} {
		bad := filepath.Join(dir, "bad.xmc")
		os.WriteFile(bad, c.damage(slices.Clone(good)), 0o644)
		_, err := ReadSections(bad, keep)
		if c.wantErr == nil && err != nil || c.wantErr != nil && !errors.Is(err, c.wantErr) {
			t.Errorf("%s: %v, want %v", c.name, err, c.wantErr)
		}
	}
}
