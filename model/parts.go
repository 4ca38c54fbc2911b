package model

import "fmt"

// readParts calls fn on every file holding part of the model at path: the
// file itself, or each shard of a manifest (checked against the manifest's
// sizes and checksums), one at a time so that only one shard is in memory
// at once. With keep set only the sections it accepts are read (see
// ReadSections); without it every byte is read and verified. It returns
// the header of the whole model, and checks that every shard has that
// header's algorithm and dimensions.
func readParts(path string, keep func(name string) bool, fn func(f *File, whole Header) error) (Header, error) {
	isManifest, err := IsManifest(path)
	if err != nil {
		return Header{}, err
	}
	if !isManifest {
		var f *File
		if keep == nil {
			f, err = ReadFile(path)
		} else {
			f, err = ReadSections(path, keep)
		}
		if err != nil {
			return Header{}, err
		}
		return f.Header, fn(f, f.Header)
	}
	m, err := ReadManifest(path)
	if err != nil {
		return Header{}, err
	}
	h := m.Header
	for _, ref := range m.Shards {
		f, err := ReadShard(path, ref, keep)
		if err != nil {
			return Header{}, err
		}
		if f.Header.Algorithm != h.Algorithm || f.Header.D != h.D || f.Header.L != h.L {
			return Header{}, fmt.Errorf("%s: shard is %s D=%d L=%d but the model is %s D=%d L=%d",
				f.Path, f.Header.Algorithm, f.Header.D, f.Header.L, h.Algorithm, h.D, h.L)
		}
		if err := fn(f, h); err != nil {
			return Header{}, err
		}
	}
	return h, nil
}
