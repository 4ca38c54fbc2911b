package wire

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// TestReader reads a record straight through and checks once: values in
// order, the first error remembered (later reads give zeros), and End's
// verdict on a short or a long input.
func TestReader(t *testing.T) {
	var b []byte
	b = append(b, 7)
	b = binary.LittleEndian.AppendUint32(b, 1<<31)
	b = binary.LittleEndian.AppendUint64(b, 1<<40)
	b = binary.AppendUvarint(b, 300)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(1.5))
	b = binary.LittleEndian.AppendUint32(b, uint32(0xFFFFFFFF)) // int32 -1
	errCorrupt := errors.New("corrupt")

	r := NewReader(b)
	if r.U8() != 7 || r.U32() != 1<<31 || r.U64() != 1<<40 || r.Uvarint() != 300 {
		t.Fatal("integers read back wrong")
	}
	if f := r.F32s(1); len(f) != 1 || f[0] != 1.5 {
		t.Fatalf("F32s = %v", f)
	}
	if i := r.I32s(1); len(i) != 1 || i[0] != -1 {
		t.Fatalf("I32s = %v", i)
	}
	if err := r.End(errCorrupt); err != nil {
		t.Fatalf("End after reading everything: %v", err)
	}

	r = NewReader(b[:3])
	if r.U8() != 7 || r.U32() != 0 || r.Err() == nil {
		t.Fatal("a read past the end gave a value or no error")
	}
	if r.U8() != 0 || len(r.I64s(0)) != 0 {
		t.Error("reads after an error gave values")
	}
	if err := r.End(errCorrupt); !errors.Is(err, errCorrupt) {
		t.Errorf("End after a failed read: %v, want it to wrap %v", err, errCorrupt)
	}

	r = NewReader(b)
	r.U8()
	if err := r.End(errCorrupt); !errors.Is(err, errCorrupt) || r.Len() != len(b)-1 {
		t.Errorf("End with %d bytes left: %v", r.Len(), err)
	}

	if r := NewReader([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}); r.Uvarint() != 0 || r.Err() == nil {
		t.Error("a varint over 32 bits was accepted")
	}
}
