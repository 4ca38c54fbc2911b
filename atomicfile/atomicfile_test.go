package atomicfile

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// entries lists the names in dir, so a test can see leftover temporary files.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	for _, c := range []struct {
		name    string
		write   func(w *bufio.Writer) error
		want    string // content of path afterwards
		wantErr bool
	}{
		{"new file", func(w *bufio.Writer) error { _, err := w.WriteString("first"); return err }, "first", false},
		{"replace", func(w *bufio.Writer) error { _, err := w.WriteString("second"); return err }, "second", false},
		{"failed write keeps the old file", func(w *bufio.Writer) error {
			w.WriteString("partial")
			return errors.New("disk full")
		}, "second", true},
	} {
		err := Write(path, c.write)
		if (err != nil) != c.wantErr {
			t.Fatalf("%s: error %v, want error %v", c.name, err, c.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the path", c.name, err)
		}
		b, _ := os.ReadFile(path)
		if string(b) != c.want {
			t.Errorf("%s: file holds %q, want %q", c.name, b, c.want)
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Errorf("%s: directory holds %v, want only the file", c.name, names)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644", c.name, st.Mode().Perm())
		}
	}
}

func TestCreateAbortAndCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.bin")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("abandoned"))
	f.Abort()
	if names := entries(t, dir); len(names) != 0 {
		t.Errorf("after Abort the directory holds %v", names)
	}
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}

	f, err = Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("kept"))
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("the destination exists before Commit")
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // a deferred Abort after Commit must not remove the file
	if b, _ := os.ReadFile(path); string(b) != "kept" {
		t.Errorf("file holds %q", b)
	}
	if _, err := Create(filepath.Join(dir, "no-such-dir", "x")); err == nil {
		t.Error("Create in a missing directory succeeded")
	}
}

// TestWriteInPlace writes to a named pipe, as to /dev/null or /dev/stdout:
// the bytes go through the pipe, which is still a pipe afterwards (a rename
// over it would have put a file in its place), and no temporary file is
// left. A directory is refused.
func TestWriteInPlace(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe")
	if err := unix.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(pipe)
		got <- b
	}()
	if err := WriteBytes(pipe, []byte("scores")); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if string(b) != "scores" {
			t.Errorf("the pipe's reader got %q", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came through the pipe")
	}
	if st, err := os.Lstat(pipe); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe is no longer a pipe: %v, %v", st, err)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only the pipe", names)
	}
	if err := WriteBytes(dir, []byte("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("writing to a directory: error %v", err)
	}
}

// TestWriteThroughLink writes to a symbolic link to a file, as to
// /dev/stdout redirected to one: the file gets the bytes, the link stays a
// link, and no temporary file is left beside either.
func TestWriteThroughLink(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	file, link := filepath.Join(other, "scores.txt"), filepath.Join(dir, "out")
	if err := os.WriteFile(file, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != "new" {
		t.Errorf("the linked file holds %q", b)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is no longer a link: %v, %v", st, err)
	}
	if a, b := entries(t, dir), entries(t, other); len(a) != 1 || len(b) != 1 {
		t.Errorf("directories hold %v and %v, want the link and the file", a, b)
	}
}
