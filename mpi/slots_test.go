package mpi

import (
	"bytes"
	"slices"
	"testing"
)

func TestSlotSizer(t *testing.T) {
	var s slotSizer
	for _, c := range []struct {
		longest, want int // the longest part seen, then the next slot size
	}{
		{0, minSlot}, // the first exchange's slot holds the recent zeros
		{48, 64},
		{49, 128},
		{10, 128}, {10, 128}, {10, 128}, // 49 is still among the last four
		{10, 64},
		{1008, maxSlot},
		{1009, slotHeader}, // too long for any slot: the headers alone
		{0, slotHeader}, {0, slotHeader}, {0, slotHeader},
		{0, minSlot},
	} {
		s.saw(c.longest)
		if got := s.size(); got != c.want {
			t.Fatalf("after a longest part of %d bytes, slot size %d, want %d (recent %v)", c.longest, got, c.want, s.recent)
		}
	}
}

func TestSlotsCarryParts(t *testing.T) {
	const size = 64
	parts := [][]byte{{}, []byte("a"), bytes.Repeat([]byte("b"), size-slotHeader), bytes.Repeat([]byte("c"), size)}
	recv := make([]byte, size*len(parts))
	for q, p := range parts {
		putSlot(recv[q*size:(q+1)*size], p, 3*q)
	}
	lens, total, longest := readSlots(recv, size, len(parts))
	if want := []int64{0, 1, size - slotHeader, size}; !slices.Equal(lens, want) || total != 2*size-slotHeader+1 {
		t.Fatalf("lengths %v, total %d; want %v, %d", lens, total, want, 2*size-slotHeader+1)
	}
	if longest != 9 {
		t.Fatalf("longest %d, want 9, the largest that a sender gave", longest)
	}
	all := make([]byte, total-size) // the parts that fit their slots
	copySlots(all, recv, size, lens[:3])
	if want := append([]byte("a"), parts[2]...); !bytes.Equal(all, want) {
		t.Fatalf("copied %q, want %q", all, want)
	}
}
