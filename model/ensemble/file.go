package ensemble

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"

	"xmc/model"
	"xmc/model/internal/wire"
)

// membersSection is the name of the ensemble file's one section: the JSON
// list of its members.
const membersSection = "members"

// Loader loads a member model, keeping the units for which keep returns
// true (all if keep is nil); package kinds's Load, which knows every kind.
type Loader func(path string, keep func(unit int) bool) (model.Model, model.Header, error)

// Header returns the header of an ensemble of members over D features and
// L labels; params records how the weights were chosen.
func Header(D, L int, seed uint64, params json.RawMessage, members int) model.Header {
	return model.Header{Algorithm: Algorithm, Kind: KindName, D: D, L: L, Seed: seed, Params: params,
		Counts: map[string]int64{"members": int64(members)}}
}

// Write writes the ensemble file of header h and members to path
// atomically (nothing is left at path on error). Member paths are stored
// as given: relative ones are read from path's directory.
func Write(path string, h model.Header, members []Member) error {
	if err := check(h, members); err != nil {
		return fmt.Errorf("write ensemble %s: %w", path, err)
	}
	b, err := json.MarshalIndent(members, "", "  ")
	if err != nil {
		return err
	}
	return model.WriteFile(path, h, []model.Section{{Name: membersSection, Data: b}})
}

// check reports the first member whose header does not fit the ensemble's
// label space, or a weight that is not a number of at least 0.
func check(h model.Header, members []Member) error {
	if len(members) == 0 {
		return fmt.Errorf("no members")
	}
	for m, s := range members {
		switch {
		case s.Header.L != h.L:
			return fmt.Errorf("member %d %s has L=%d labels, the ensemble %d: members must share one label space", m, s.Path, s.Header.L, h.L)
		case s.Header.Kind == KindName:
			return fmt.Errorf("member %d %s is an ensemble: list its members instead", m, s.Path)
		case !(s.Weight >= 0) || math.IsInf(s.Weight, 0):
			return fmt.Errorf("member %d %s has weight %v: want a number of at least 0", m, s.Path, s.Weight)
		}
	}
	return nil
}

// Equal returns the ensemble of the loaded members (read from paths, with
// headers) with equal weights and each kind's default calibration, and
// its header: what xmc predict makes of several --model files.
func Equal(members []model.Model, headers []model.Header, paths []string) (*Model, model.Header, error) {
	spec := make([]Member, len(members))
	for m := range members {
		spec[m] = Member{Path: paths[m], Header: headers[m], Weight: 1 / float64(len(members)),
			Calibration: DefaultCalibration(model.KindName(headers[m]))}
	}
	h := Header(headers[0].D, headers[0].L, headers[0].Seed, nil, len(members))
	for _, mh := range headers {
		h.D = max(h.D, mh.D)
	}
	if err := check(h, spec); err != nil {
		return nil, h, err
	}
	e, err := New(members, spec, h.L)
	return e, h, err
}

// Load reads the ensemble file at path and loads its members with load,
// each keeping the units for which keep returns true: a rank that keeps
// the units it owns holds its part of every member.
func Load(path string, keep func(unit int) bool, load Loader) (model.Model, model.Header, error) {
	f, err := model.ReadFile(path)
	if err != nil {
		return nil, model.Header{}, err
	}
	h := f.Header
	if model.KindName(h) != KindName {
		return nil, h, fmt.Errorf("%s: a %s model, not an ensemble", path, model.KindName(h))
	}
	b, err := f.Section(membersSection)
	if err != nil {
		return nil, h, fmt.Errorf("%s: %w", path, err)
	}
	var spec []Member
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, h, fmt.Errorf("%s: %w: members: %v", path, model.ErrCorrupt, err)
	}
	if err := check(h, spec); err != nil {
		return nil, h, fmt.Errorf("%s: %w", path, err)
	}
	members := make([]model.Model, len(spec))
	for m, s := range spec {
		p := s.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		mm, mh, err := load(p, keep)
		if err != nil {
			return nil, h, fmt.Errorf("ensemble %s: member %d: %w", path, m, err)
		}
		if !sameHeader(mh, s.Header) {
			return nil, h, fmt.Errorf("ensemble %s: member %d %s is not the model the ensemble was made with (algorithm %q, D=%d, L=%d, seed %d, params %s; the ensemble recorded %q, D=%d, L=%d, seed %d, params %s): make the ensemble again",
				path, m, p, mh.Algorithm, mh.D, mh.L, mh.Seed, mh.Params, s.Header.Algorithm, s.Header.D, s.Header.L, s.Header.Seed, s.Header.Params)
		}
		members[m] = mm
	}
	e, err := New(members, spec, h.L)
	if err != nil {
		return nil, h, fmt.Errorf("%s: %w", path, err)
	}
	return e, h, nil
}

// sameHeader reports whether a and b describe the same trained model:
// algorithm, kind, dimensions, seed, parameters and counts.
func sameHeader(a, b model.Header) bool {
	var pa, pb any
	if json.Unmarshal(a.Params, &pa) != nil || json.Unmarshal(b.Params, &pb) != nil {
		return false
	}
	return a.Algorithm == b.Algorithm && model.KindName(a) == model.KindName(b) && a.D == b.D && a.L == b.L &&
		a.Seed == b.Seed && reflect.DeepEqual(pa, pb) && reflect.DeepEqual(a.Counts, b.Counts)
}

// splitSums splits one part's encoded partial rows (model.EncodeSums of
// Partial's rows, labels numbered m·L + label) into one encoding per
// member, with the members' own label numbers.
func splitSums(b []byte, rows, L, members int) ([][]byte, error) {
	le := binary.LittleEndian
	r := wire.NewReader(b)
	if n := r.U64(); n != uint64(rows) {
		return nil, fmt.Errorf("%d rows, want %d", n, rows)
	}
	out := make([][]byte, members)
	counts := make([]int, members)
	for m := range out {
		out[m] = le.AppendUint64(nil, uint64(rows))
	}
	var labels []uint32
	var sums []uint64
	for i := range rows {
		n := int(r.U32())
		labels, sums = labels[:0], sums[:0]
		clear(counts)
		for range n {
			l, s := r.U32(), r.U64()
			if r.Err() != nil || l >= uint32(members*L) {
				return nil, fmt.Errorf("row %d is malformed", i)
			}
			labels, sums = append(labels, l), append(sums, s)
			counts[l/uint32(L)]++
		}
		for m := range out {
			out[m] = le.AppendUint32(out[m], uint32(counts[m]))
		}
		// Partial appends member after member, so each member's labels
		// are consecutive; the pass keeps any order.
		for q, l := range labels {
			m := l / uint32(L)
			out[m] = le.AppendUint64(le.AppendUint32(out[m], l-m*uint32(L)), sums[q])
		}
	}
	if err := r.End(model.ErrCorrupt); err != nil {
		return nil, err
	}
	return out, nil
}
