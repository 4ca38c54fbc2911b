// Package wire decodes the little-endian binary encodings of xmc's model
// units (trees, label blocks) and of the partial scores ranks exchange.
// encoding/binary reads one value at a time and returns an error for each;
// a Reader remembers the first error instead, so that a decoder reads a
// whole record straight through and checks once, and every length is
// checked against the bytes left before anything is allocated.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Reader decodes little-endian values from a byte slice, remembering the
// first error: after one, every read returns zero values.
type Reader struct {
	b   []byte
	err error
}

// NewReader returns a Reader of b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err returns the first read error, or nil.
func (r *Reader) Err() error { return r.err }

// Len returns the number of bytes not yet read.
func (r *Reader) Len() int { return len(r.b) }

// End returns nil if every read succeeded and consumed the whole input,
// else the read error or the trailing bytes, wrapped in corrupt.
func (r *Reader) End(corrupt error) error {
	if r.err != nil {
		return fmt.Errorf("%w: %v", corrupt, r.err)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", corrupt, len(r.b))
	}
	return nil
}

// Take returns the next n bytes, aliasing the input, or nil past its end.
func (r *Reader) Take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("truncated: need %d bytes, have %d", n, len(r.b))
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

// U8 reads a byte.
func (r *Reader) U8() uint8 {
	p := r.Take(1)
	if p == nil {
		return 0
	}
	return p[0]
}

// U32 reads a uint32.
func (r *Reader) U32() uint32 {
	p := r.Take(4)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

// U64 reads a uint64.
func (r *Reader) U64() uint64 {
	p := r.Take(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

// Uvarint reads an unsigned varint of at most 32 bits.
func (r *Reader) Uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) > 0 && r.b[0] < 0x80 { // the common one-byte case
		v := uint64(r.b[0])
		r.b = r.b[1:]
		return v
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > math.MaxUint32 {
		r.err = errors.New("truncated or oversized varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Slice reads n values of size bytes each, decoded by dec, into a new
// slice; an empty (not nil) slice when nothing could be read.
func Slice[T any](r *Reader, n, size int, dec func([]byte) T) []T {
	p := r.Take(size * n)
	if p == nil {
		return make([]T, 0)
	}
	s := make([]T, n)
	for i := range s {
		s[i] = dec(p[size*i:])
	}
	return s
}

// I32s reads n int32 values.
func (r *Reader) I32s(n int) []int32 {
	return Slice(r, n, 4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
}

// Bytes reads n bytes into a new slice.
func (r *Reader) Bytes(n int) []byte {
	p := r.Take(n)
	return append(make([]byte, 0, len(p)), p...)
}

// F32s reads n float32 values.
func (r *Reader) F32s(n int) []float32 {
	return Slice(r, n, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
}

// I64s reads n int64 values.
func (r *Reader) I64s(n int) []int64 {
	return Slice(r, n, 8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
}
