package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"xmc/checksum"
	"xmc/data"
)

// fingerprint identifies the algorithm, hyper-parameters, units of work and
// training data of a run, for checkpoints: the algorithm, a CRC-32C of the
// parameters, the number of units and layout, a CRC-32C of what each unit
// weighs (see unitLayout), and dataCRC, the training data's (see dataCRC).
// The units are there because a trainer's layout of them may change between
// builds for the same parameters (PD-Sparse's did, and a one-vs-all
// trainer's label blocks follow its estimate of a label's cost): a
// checkpoint of other units must be refused as another run's, not read.
func fingerprint(algo string, params any, units int, layout, dataCRC uint32) string {
	return fmt.Sprintf("%s %08x units %d/%08x %08x", algo, checksum.Sum(mustJSON(params)), units, layout, dataCRC)
}

// unitLayout is the CRC-32C of weight(u) for every unit u, little-endian
// (0 without weight): a label block's labels, which, the labels' order being
// the data's, fix which labels each block holds.
func unitLayout(units int, weight func(u int) int) uint32 {
	if weight == nil {
		return 0
	}
	// A write a unit: the units are few beside the data's entries (a
	// million units hash in milliseconds), so no buffer as in dataCRC.
	h := checksum.New()
	var word [8]byte
	for u := range units {
		binary.LittleEndian.PutUint64(word[:], uint64(weight(u)))
		h.Write(word[:])
	}
	return h.Sum32()
}

// dataCRC is the CRC-32C of the shapes and entries of d's matrices, the
// entries little-endian, hashed through one small buffer (an encoding of
// the whole matrix in fresh memory cost 11 ms of page faults per rank on
// Bibtex).
func dataCRC(d *data.Dataset) uint32 {
	h := checksum.New()
	buf := make([]byte, 0, 64<<10)
	flushIfFull := func() {
		if len(buf)+4 > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	for _, m := range []*data.CSR{&d.X, &d.Y} {
		fmt.Fprintf(h, "%d %d %d;", m.Rows, m.Cols, m.NNZ())
		for _, v := range m.Indices {
			flushIfFull()
			buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
		}
		for _, v := range m.Values {
			flushIfFull()
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		h.Write(buf)
		buf = buf[:0]
	}
	return h.Sum32()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs are marshalled
	}
	return b
}
