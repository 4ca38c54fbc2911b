package registry

import (
	"flag"
	"strings"
	"testing"
)

// TestAlgorithms checks the registry: names unique and found by Lookup,
// the default among them, every trainer's flags registered on a flag set
// of their own and parsed from their defaults, and an unknown name refused
// with the list of names.
func TestAlgorithms(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range Algorithms() {
		if a.Name == "" || a.Summary == "" || a.New == nil || seen[a.Name] {
			t.Errorf("algorithm %+v: empty field or name twice", a)
		}
		seen[a.Name] = true
		got, err := Lookup(a.Name)
		if err != nil || got.Name != a.Name {
			t.Errorf("Lookup(%q) = %v, %v", a.Name, got.Name, err)
		}
		fs := flag.NewFlagSet(a.Name, flag.ContinueOnError)
		a.New().Flags(fs)
		n := 0
		fs.VisitAll(func(f *flag.Flag) {
			n++
			if f.Usage == "" {
				t.Errorf("%s --%s has no help text", a.Name, f.Name)
			}
		})
		if n == 0 {
			t.Errorf("%s registers no flag", a.Name)
		}
		if err := fs.Parse(nil); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
	}
	if !seen[Default] {
		t.Errorf("the default %q is not an algorithm", Default)
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), Default) {
		t.Errorf("Lookup(nope): %v, want an error listing the algorithms", err)
	}
}
