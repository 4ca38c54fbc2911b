// Package kinds lists every kind of model xmc reads, and finds the kind of
// a model file from its header: the one place that knows them all, so that
// prediction and xmc inspect load any model, and each kind's package knows
// only itself.
package kinds

import (
	"fmt"

	"xmc/model"
	"xmc/model/ensemble"
	"xmc/model/forest"
	"xmc/model/linear"
	"xmc/model/plt"
)

// All returns every kind of model.
func All() []model.Kind { return []model.Kind{forest.Kind{}, linear.Kind{}, plt.Kind{}} }

// Of returns the kind of model that header h describes.
func Of(h model.Header) (model.Kind, error) {
	name := model.KindName(h)
	for _, k := range All() {
		if k.Name() == name {
			return k, nil
		}
	}
	if h.Kind == "" {
		return nil, fmt.Errorf("%w: unknown algorithm %q and no model kind", model.ErrCorrupt, h.Algorithm)
	}
	return nil, fmt.Errorf("%w: unknown model kind %q (algorithm %q): upgrade xmc", model.ErrVersion, h.Kind, h.Algorithm)
}

// Load reads the model at path, a model file or the manifest of a sharded
// one, whatever its kind, keeping the units for which keep returns true
// (all of them if keep is nil). An ensemble file loads its members so,
// each keeping the units keep accepts.
func Load(path string, keep func(unit int) bool) (model.Model, model.Header, error) {
	h, err := model.ReadHeader(path)
	if err != nil {
		return nil, h, err
	}
	if model.KindName(h) == ensemble.KindName {
		return ensemble.Load(path, keep, Load)
	}
	k, err := Of(h)
	if err != nil {
		return nil, h, fmt.Errorf("%s: %w", path, err)
	}
	return k.Load(path, keep)
}
