package checksum

import "testing"

// TestSum checks Sum and New against the CRC-32C check value of the
// catalogue of CRC parameters ("123456789" -> 0xE3069283).
func TestSum(t *testing.T) {
	const want = 0xE3069283
	if got := Sum([]byte("123456789")); got != want {
		t.Errorf("Sum = %08x, want %08x", got, want)
	}
	h := New()
	h.Write([]byte("1234"))
	h.Write([]byte("56789"))
	if got := h.Sum32(); got != want {
		t.Errorf("New, written in two pieces = %08x, want %08x", got, want)
	}
}
