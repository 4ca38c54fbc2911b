package model

import "encoding/json"

// Header describes a model: which algorithm produced it, its dimensions and
// the hyper-parameters needed to reproduce or continue it.
type Header struct {
	// Algorithm names the trainer, for example "forest" or "dismec".
	Algorithm string `json:"algorithm"`
	// Kind names the kind of model (see Kind), for example "linear".
	// Headers of the first algorithms leave it empty: their algorithm
	// says it (see KindOf).
	Kind string `json:"kind,omitempty"`
	// D is the number of features and L the number of labels of the
	// training data.
	D int `json:"d"`
	L int `json:"l"`
	// Seed is the random seed the model was trained with.
	Seed uint64 `json:"seed"`
	// Params holds the algorithm's hyper-parameters as a JSON object.
	Params json.RawMessage `json:"params,omitempty"`
	// Counts holds sizes worth reporting without decoding the model, for
	// example "trees", "nodes" or "nnz".
	Counts map[string]int64 `json:"counts,omitempty"`
	// Shard is nil for a whole model and describes the part held by this
	// file for one shard of a sharded model.
	Shard *ShardInfo `json:"shard,omitempty"`
	// Range is nil for a model of every label, and describes the labels
	// held for a model of a label range (xmc train --label-range), which
	// xmc merge joins with the others into the whole model.
	Range *LabelRange `json:"label_range,omitempty"`
}

// LabelRange says which labels a range model holds: the labels From to To
// (excluded) of the whole training's order, most frequent first, of Labels
// labels with a positive row in all. The whole training's model has Units
// label blocks; this one holds the part of blocks FirstUnit, FirstUnit+1, …
// that the range covers, the first and last perhaps cut. DataCRC
// fingerprints the training data, so that ranges of other data are not
// merged.
type LabelRange struct {
	From      int    `json:"from"`
	To        int    `json:"to"`
	Labels    int    `json:"labels"`
	Units     int    `json:"units"`
	FirstUnit int    `json:"first_unit"`
	DataCRC   uint32 `json:"data_crc"`
}

// ShardInfo says which part of a model a shard file holds. Models are
// sharded along one axis: a forest by trees, a one-vs-all model by labels.
type ShardInfo struct {
	// Rank is this shard's index (the MPI rank that wrote it) and Ranks the
	// number of shards of the model.
	Rank  int `json:"rank"`
	Ranks int `json:"ranks"`
	// Axis is what the model is split along: "trees" or "labels".
	Axis string `json:"axis"`
	// Lo, Hi and Stride say which ids of the axis are held here: Lo,
	// Lo+Stride, Lo+2·Stride, … below Hi. Stride 0 or 1 means the whole
	// half-open range [Lo, Hi); a forest whose trees were dealt to ranks
	// cyclically has Lo = rank and Stride = ranks.
	Lo     int64 `json:"lo"`
	Hi     int64 `json:"hi"`
	Stride int64 `json:"stride,omitempty"`
	// Units, when set, lists the ids held, all in [Lo, Hi): a model
	// trained under the dynamic schedule has them wherever a rank asked.
	Units []int64 `json:"units,omitempty"`
}

// legacyKind is the kind of the models of the first three algorithms,
// whose headers name no kind: their files were written before kinds were
// recorded, and are still written the same way, byte for byte. Every later
// algorithm records its kind in the header (see NewHeader): this list is
// part of the file format's history and does not grow.
func legacyKind(algorithm string) string {
	switch algorithm {
	case "forest":
		return "forest"
	case "dismec", "ppdsparse":
		return "linear"
	}
	return ""
}

// KindName returns the name of the kind of model that header h describes:
// the kind it records, or its algorithm's for the first algorithms.
func KindName(h Header) string {
	if h.Kind != "" {
		return h.Kind
	}
	return legacyKind(h.Algorithm)
}

// NewHeader returns the header of a model of kind k trained by algorithm,
// over D features and L labels, with the given seed and hyper-parameters
// (a JSON object). It records the kind, but for the algorithms whose
// headers never did.
func NewHeader(k Kind, algorithm string, D, L int, seed uint64, params json.RawMessage) Header {
	h := Header{Algorithm: algorithm, D: D, L: L, Seed: seed, Params: params}
	if legacyKind(algorithm) != k.Name() {
		h.Kind = k.Name()
	}
	return h
}
