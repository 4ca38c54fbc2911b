package model

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"xmc/data"
	"xmc/numa"
)

// Kind is one kind of model: how a trainer's units (a tree, a block of
// labels) are stored in a model file, and how a model, or the part of one
// that a rank holds, is decoded to score rows. Each kind has its package
// below this one (model/forest, model/linear, model/plt); trainers name the
// kind they produce, and package kinds finds a file's kind from its header.
type Kind interface {
	// Name names the kind in model headers: "forest", "linear".
	Name() string
	// Unit names one unit in messages ("tree", "label block"), and Axis
	// what the units of a model are ("trees", "labels"): what a sharded
	// model is split along.
	Unit() string
	Axis() string
	// Section returns the name of unit u's section in a model file, and
	// ParseSection the unit of a section name (false for a name that is
	// not a unit of this kind): the id makes a shard self-describing.
	Section(u int) string
	ParseSection(name string) (int, bool)
	// Counts returns the sizes that the header of a model made of the
	// encoded units records (nil entries, units not held, skipped), after
	// checking that h can head such a model. Counts add up over parts: a
	// model gathered from several ranks records the sum of each rank's.
	Counts(h Header, units [][]byte) (map[string]int64, error)
	// ManifestCounts returns the Counts of the manifest of a sharded model
	// of header h whose shards hold units units in all.
	ManifestCounts(h Header, units int) map[string]int64
	// Decode builds the model part made of the encoded units (nil entries
	// skipped) of a model of header h that has total units in all.
	Decode(h Header, units [][]byte, total int) (Model, error)
	// Load reads the model at path, a model file or the manifest of a
	// sharded one, keeping the units for which keep returns true (all of
	// them if keep is nil), so that each rank can load only the part it
	// scores with.
	Load(path string, keep func(unit int) bool) (Model, Header, error)
}

// Model is a trained model, or the part of one that a rank holds, ready to
// score rows.
type Model interface {
	// Predict returns the k best labels of every row of x with their
	// scores, computed by the pool's workers. It needs the whole model.
	Predict(x *data.CSR, k int, pool *numa.Pool) ([][]Scored, error)
	// Partial returns every row's partial result for the labels this part
	// knows (sums of leaf vectors, or its own top k), which Merge, called
	// with the encoded (EncodeSums) Partial of every part, combines into
	// exactly what Predict on the whole model returns. Partial results
	// are sparse: never dense in the labels.
	Partial(x *data.CSR, k int, pool *numa.Pool) ([]Sparse, error)
	// Merge combines the encoded partial results of every part of the
	// model for rows rows and returns each row's k best labels.
	Merge(parts [][]byte, rows, k int) ([][]Scored, error)
	// Summary says in a few words what the model holds ("50 trees",
	// "159 labels, 20312 weights (127.7 per label)").
	Summary() string
	// Describe writes what xmc inspect shows of the model beyond its
	// header and Summary (a forest's table of tree shapes), if anything.
	Describe(w io.Writer) error
}

// checkKind reports an error unless the model file f holds a model of kind k.
func checkKind(f *File, k Kind) error {
	switch name := KindName(f.Header); {
	case name == "":
		return fmt.Errorf("%s: %w: unknown algorithm %q and no model kind", f.Path, ErrCorrupt, f.Header.Algorithm)
	case name != k.Name():
		return fmt.Errorf("%s: a %s model (%q), not a %s model", f.Path, name, f.Header.Algorithm, k.Name())
	}
	return nil
}

// CreateUnits writes a model of kind k (or one shard of it, with h.Shard
// set) holding the encoded units (index = unit id; nil entries, units not
// held, are skipped) to path, with h.Counts set from them. The file is
// written and flushed (the units may be freed), but not yet durable nor at
// path: the caller commits it.
func CreateUnits(k Kind, path string, h Header, units [][]byte) (*Writer, error) {
	counts, err := k.Counts(h, units)
	if err != nil {
		return nil, fmt.Errorf("write model %s: %w", path, err)
	}
	h.Counts = counts
	w, err := Create(path, h)
	if err != nil {
		return nil, err
	}
	for u, b := range units {
		if b == nil {
			continue
		}
		if err := w.AddSection(k.Section(u), b); err != nil {
			w.Abort()
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return w, nil
}

// LoadUnits calls add with each unit of the model of kind k at path (a
// file or a manifest) for which keep returns true (all if keep is nil), in
// file order, after checking that every file holds a model of kind k; a
// section that is not a unit of k is an error. Only the sections kept are
// read (see readParts). It returns the whole model's header.
func LoadUnits(k Kind, path string, keep func(unit int) bool, check func(f *File, whole Header) error, add func(f *File, s Section, unit int) error) (Header, error) {
	var keepSection func(name string) bool
	if keep != nil {
		keepSection = func(name string) bool {
			u, ok := k.ParseSection(name)
			return !ok || keep(u) // a foreign section is read, to be reported
		}
	}
	return readParts(path, keepSection, func(f *File, whole Header) error {
		if err := checkKind(f, k); err != nil {
			return err
		}
		if check != nil {
			if err := check(f, whole); err != nil {
				return err
			}
		}
		for _, s := range f.Sections {
			u, ok := k.ParseSection(s.Name)
			if !ok {
				return fmt.Errorf("%s: unexpected section %q in a %s model", f.Path, s.Name, k.Name())
			}
			if err := add(f, s, u); err != nil {
				return fmt.Errorf("%s: %s: %w", f.Path, s.Name, err)
			}
		}
		return nil
	})
}

// UnitSection formats the section name of unit u as prefix and six digits,
// and ParseUnitSection reverses it: how the kinds name their units'
// sections.
func UnitSection(prefix string, u int) string { return fmt.Sprintf("%s%06d", prefix, u) }

// ParseUnitSection returns the unit of a section name made by UnitSection
// with prefix, and false for another name.
func ParseUnitSection(prefix, name string) (int, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	u, err := strconv.Atoi(s)
	return u, err == nil && u >= 0
}

// CountHeld returns the number of units held, the non-nil entries.
func CountHeld(units [][]byte) int {
	n := 0
	for _, u := range units {
		if u != nil {
			n++
		}
	}
	return n
}
