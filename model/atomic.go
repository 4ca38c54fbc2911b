package model

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// WriteAtomic creates path through write, atomically: write fills a
// temporary file in path's directory (through a buffer), which is then
// synced and renamed over path. On any error the temporary file is removed
// and an existing file at path is left as it was, so a crash or a full disk
// never leaves a partial model, score file or summary behind. xmc writes
// every output file this way.
func WriteAtomic(path string, write func(w *bufio.Writer) error) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(tmp, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = finishTemp(tmp, path)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
