package data

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// LabelNames are readable names of labels, indexed by label id, so that a
// person can read what a model predicts.
type LabelNames []string

// Name returns the name of label l, or its id when it has none.
func (n LabelNames) Name(l int32) string {
	if int(l) < len(n) && l >= 0 && n[l] != "" {
		return n[l]
	}
	return strconv.Itoa(int(l))
}

// ReadLabelNames reads a label file of tab-separated lines "id name
// [count [description]]" (lines starting with '#' are comments), as the
// shared data sets' labels.txt. A label's name is its name field, followed
// by its description in parentheses when there is one. Errors name the
// file and line.
func ReadLabelNames(path string) (LabelNames, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read label names: %w", err)
	}
	defer f.Close()
	var names LabelNames
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, "\t")
		if len(fields) < 2 {
			return nil, fmt.Errorf("%s:%d: want \"id<TAB>name[<TAB>count[<TAB>description]]\", got %q", path, line, text)
		}
		id, err := strconv.Atoi(fields[0])
		if err != nil || id < 0 || id >= maxDim {
			return nil, fmt.Errorf("%s:%d: label id %q is not an integer in [0, %d)", path, line, fields[0], maxDim)
		}
		name := fields[1]
		if len(fields) >= 4 && fields[3] != "" {
			name += " (" + fields[3] + ")"
		}
		for len(names) <= id {
			names = append(names, "")
		}
		if names[id] != "" {
			return nil, fmt.Errorf("%s:%d: label %d named twice", path, line, id)
		}
		names[id] = name
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read label names %s: %w", path, err)
	}
	return names, nil
}

// LabelCounts returns the number of rows of the label matrix y in which
// each label occurs (the stored entries per column).
func LabelCounts(y *CSR) []int64 {
	counts := make([]int64, y.Cols)
	for _, l := range y.Indices[:y.NNZ()] {
		counts[l]++
	}
	return counts
}
