package data

import (
	"fmt"
	"io"
	"os"
)

// ReadSplit reads a dataset in the split format of the C++ DXML small-data
// program: the data file at dataPath (XMC format, unless opt says otherwise)
// holds all rows, and the split file at splitPath lists, one per line, the
// 1-based ids of the rows that make up this split, in whitespace-separated
// columns, one column per random split. col picks the column, counted from
// 1 as users count. Both files may be gzip-compressed.
//
// To take both the train and the test split from one data file without
// parsing it twice, use ReadFile, ReadSplitRows and Dataset.Subset.
func ReadSplit(dataPath, splitPath string, col int, opt ReadOptions) (*Dataset, error) {
	d, err := ReadFile(dataPath, opt)
	if err != nil {
		return nil, err
	}
	rows, err := ReadSplitRows(splitPath, col, d.N())
	if err != nil {
		return nil, err
	}
	return d.Subset(rows), nil
}

// ReadSplitRows reads column col (1-based) of the split file at path and
// returns its row ids as 0-based indices into a data file of n rows, in file
// order. An id outside [1, n], a malformed or repeated id, a missing column
// or an empty file is a *ParseError.
func ReadSplitRows(path string, col, n int) ([]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read split: %w", err)
	}
	defer f.Close()
	return readSplitRows(f, path, col, n)
}

func readSplitRows(r io.Reader, name string, col, n int) ([]int, error) {
	if col < 1 {
		return nil, fmt.Errorf("read split %s: column %d: columns are numbered from 1", name, col)
	}
	lines, err := openText(r, name)
	if err != nil {
		return nil, err
	}
	defer lines.close()
	var rows []int
	firstLine := make([]int32, n) // line where each row was listed, 0 if not yet
	for {
		b, err := lines.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		// Find the start and end of field number col.
		start, end := 0, 0
		for k := 0; k < col; k++ {
			start = end
			for start < len(b) && isSpace(b[start]) {
				start++
			}
			if start == len(b) {
				return nil, errorf(name, lines.line, start+1, "line has %d columns, split column %d requested", k, col)
			}
			end = start
			for end < len(b) && !isSpace(b[end]) {
				end++
			}
		}
		id := 0
		for _, c := range b[start:end] {
			if c-'0' > 9 || id > n {
				return nil, errorf(name, lines.line, start+1, "row id %s: expected an integer in [1, %d]", quote(b[start:end]), n)
			}
			id = id*10 + int(c-'0')
		}
		if id < 1 || id > n {
			return nil, errorf(name, lines.line, start+1, "row id %d out of range [1, %d] (the data file's rows)", id, n)
		}
		if first := firstLine[id-1]; first != 0 {
			return nil, errorf(name, lines.line, start+1, "row id %d listed twice (first on line %d)", id, first)
		}
		firstLine[id-1] = int32(min(lines.line, 1<<31-1))
		rows = append(rows, id-1)
	}
	if len(rows) == 0 {
		return nil, errorf(name, 1, 1, "empty split file, expected 1-based row ids")
	}
	return rows, nil
}
