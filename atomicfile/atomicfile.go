// Package atomicfile writes xmc's output files (models, checkpoints, score
// files, summaries, plots) so that the destination path holds either its old
// content or the whole new file, never a part: a crash, a full disk or a
// failed rank leaves nothing half-written behind.
//
// A file is written to a temporary name in the destination's directory
// (so that the final rename stays on one file system), then synced,
// renamed over the destination, and the directory synced so that the
// rename itself survives a crash. A destination that exists and is not a
// regular file (/dev/null, a named pipe, /dev/stdout on a terminal or a
// pipe) is written in place: renaming over it would replace the device or
// pipe with a file. A symbolic link is followed: the file it names is
// replaced, and the link kept.
package atomicfile

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// File is a file being written under a temporary name beside its
// destination. Nothing appears at the destination until Commit succeeds.
// The usual pattern is
//
//	f, err := atomicfile.Create(path)
//	if err != nil { return err }
//	defer f.Abort()
//	... write to f ...
//	return f.Commit()
type File struct {
	path string
	// target is path with its symbolic links followed: the file replaced.
	target string
	tmp    *os.File
	// inPlace is set where path is not a regular file: tmp is path
	// itself, opened for writing, and Commit only closes it.
	inPlace bool
	done    bool // committed or aborted
}

// Create starts writing the file that Commit will move to path. A path that
// is a directory is refused; one that is neither a directory nor a regular
// file is opened and written in place.
func Create(path string) (*File, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, dirError(path)
	} else if err == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{path: path, target: path, tmp: f, inPlace: true}, nil
	}
	target := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		// An error here (a dangling link) leaves the link to be replaced.
		if t, err := filepath.EvalSymlinks(path); err == nil {
			target = t
		}
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, err
	}
	return &File{path: path, target: target, tmp: tmp}, nil
}

// CheckPath returns the error that Create would return for path where path
// names a directory, so that a command can refuse an output path before it
// does its work. An empty path (no output) passes.
func CheckPath(path string) error {
	if fi, err := os.Stat(path); path != "" && err == nil && fi.IsDir() {
		return dirError(path)
	}
	return nil
}

// dirError is the refusal of a destination that is a directory.
func dirError(path string) error { return fmt.Errorf("%s is a directory", path) }

// Path returns the destination path.
func (f *File) Path() string { return f.path }

// Write writes p to the temporary file.
func (f *File) Write(p []byte) (int, error) { return f.tmp.Write(p) }

// Commit makes the file durable and moves it to its destination: the usual
// 0644 permissions (temporary files are created 0600), fsync, close,
// rename, fsync of the directory. On error the temporary file is removed.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("%s: Commit after Commit or Abort", f.path)
	}
	if f.inPlace {
		f.done = true
		return f.tmp.Close()
	}
	err := f.tmp.Chmod(0o644)
	if err == nil {
		err = f.tmp.Sync()
	}
	if err == nil {
		err = f.tmp.Close()
	}
	if err == nil {
		err = os.Rename(f.tmp.Name(), f.target)
	}
	if err != nil {
		f.Abort()
		return err
	}
	f.done = true
	return SyncDir(filepath.Dir(f.target))
}

// SyncDir fsyncs the directory dir, so that a file created or renamed in
// it survives a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Abort removes the temporary file (a destination written in place is
// only closed: what was written to it cannot be taken back). It does
// nothing after Commit, so it can be deferred.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.tmp.Close()
	if !f.inPlace {
		os.Remove(f.tmp.Name())
	}
}

// Write creates path through write, atomically: write fills the file
// through a buffer, which is then committed as Commit does. On any error an
// existing file at path is left as it was. Errors name the path.
func Write(path string, write func(w *bufio.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Commit()
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteBytes writes b to path atomically.
func WriteBytes(path string, b []byte) error {
	return Write(path, func(w *bufio.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
