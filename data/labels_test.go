package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadLabelNames(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, text string
		want       []string // names of labels 0.. (by Name)
		err        string
	}{
		{"shared format", "# label_id\tname\ttrain_count\tdescription\n0\tn:1\t5\tentity\n2\tuse::editing\t7\t\n",
			[]string{"n:1 (entity)", "1", "use::editing", "3"}, ""},
		{"name only", "0\tspam\n1\tham\n", []string{"spam", "ham"}, ""},
		{"no name", "0\n", nil, ":1: want"},
		{"bad id", "x\tname\n", nil, ":1: label id \"x\""},
		{"twice", "1\ta\n1\tb\n", nil, ":2: label 1 named twice"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		os.WriteFile(path, []byte(c.text), 0o644)
		names, err := ReadLabelNames(path)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: error %v, want one naming the file and %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for l, want := range c.want {
			if got := names.Name(int32(l)); got != want {
				t.Errorf("%s: label %d named %q, want %q", c.name, l, got, want)
			}
		}
	}
	if _, err := ReadLabelNames(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file read")
	}
}
