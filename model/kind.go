package model

import (
	"encoding/json"
	"fmt"
	"io"

	"xmc/data"
	"xmc/numa"
)

// Kind is one kind of model: how a trainer's units (a tree, a block of
// labels) are stored in a model file, and how a model, or the part of one
// that a rank holds, is decoded to score rows. Every kind lives in this
// package; trainers name the kind they produce, and Load finds it from a
// file's header.
type Kind interface {
	// Name names the kind in model headers: "forest", "linear".
	Name() string
	// Unit names one unit in messages ("tree", "label block"), and Axis
	// what the units of a model are ("trees", "labels"): what a sharded
	// model is split along.
	Unit() string
	Axis() string
	// Create writes the encoded units (index = unit id; nil entries, units
	// not held, are skipped) into one model file, or one shard, at path,
	// setting h.Counts from them. The file is written and flushed (the
	// units may be freed), but not yet durable nor at path: the caller
	// commits it.
	Create(path string, h Header, units [][]byte) (*Writer, error)
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

// Kinds lists every kind of model.
func Kinds() []Kind { return []Kind{ForestKind{}, LinearKind{}} }

// KindOf returns the kind of model that header h describes.
func KindOf(h Header) (Kind, error) {
	name := h.Kind
	if name == "" {
		name = kindOfAlgorithm(h.Algorithm)
	}
	for _, k := range Kinds() {
		if k.Name() == name {
			return k, nil
		}
	}
	if h.Kind == "" {
		return nil, fmt.Errorf("%w: unknown algorithm %q and no model kind", ErrCorrupt, h.Algorithm)
	}
	return nil, fmt.Errorf("%w: unknown model kind %q (algorithm %q): upgrade xmc", ErrVersion, h.Kind, h.Algorithm)
}

// kindOfAlgorithm is the kind of the models of the first three algorithms,
// whose headers name no kind: their files were written before kinds were
// recorded, and are still written the same way, byte for byte. Every later
// algorithm records its kind in the header (see NewHeader): this list does
// not grow.
func kindOfAlgorithm(algorithm string) string {
	switch algorithm {
	case AlgorithmForest:
		return ForestKind{}.Name()
	case AlgorithmDiSMEC, AlgorithmPPDSparse:
		return LinearKind{}.Name()
	}
	return ""
}

// NewHeader returns the header of a model of kind k trained by algorithm,
// over D features and L labels, with the given seed and hyper-parameters
// (a JSON object). It records the kind, but for the algorithms whose
// headers never did.
func NewHeader(k Kind, algorithm string, D, L int, seed uint64, params json.RawMessage) Header {
	h := Header{Algorithm: algorithm, D: D, L: L, Seed: seed, Params: params}
	if kindOfAlgorithm(algorithm) != k.Name() {
		h.Kind = k.Name()
	}
	return h
}

// checkKind reports an error unless the model file f holds a model of kind k.
func checkKind(f *File, k Kind) error {
	got, err := KindOf(f.Header)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if got.Name() != k.Name() {
		return fmt.Errorf("%s: a %s model (%q), not a %s model", f.Path, got.Name(), f.Header.Algorithm, k.Name())
	}
	return nil
}

// Load reads the model at path, a model file or the manifest of a sharded
// one, whatever its kind, keeping the units for which keep returns true
// (all of them if keep is nil).
func Load(path string, keep func(unit int) bool) (Model, Header, error) {
	h, err := ReadHeader(path)
	if err != nil {
		return nil, h, err
	}
	k, err := KindOf(h)
	if err != nil {
		return nil, h, fmt.Errorf("%s: %w", path, err)
	}
	return k.Load(path, keep)
}

// countHeld returns the number of units held, the non-nil entries.
func countHeld(units [][]byte) int {
	n := 0
	for _, u := range units {
		if u != nil {
			n++
		}
	}
	return n
}
