package train

import (
	"math/rand/v2"
	"testing"
)

// TestPlaceTable checks the table against Go's map on keys of every shape:
// dense runs of classes on one feature, runs of features for one class,
// random pairs, and extreme ids; through several growths.
func TestPlaceTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name string
		pair func(i int) (int32, int32)
	}{
		{"classes of one feature", func(i int) (int32, int32) { return 7, int32(i) }},
		{"features of one class", func(i int) (int32, int32) { return int32(i), 3 }},
		{"random", func(int) (int32, int32) { return rng.Int32N(1 << 20), rng.Int32N(1 << 20) }},
		{"extremes", func(i int) (int32, int32) { return int32(1<<31 - 1 - i), int32(i % 2 * (1<<31 - 1)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tab placeTable
			want := map[uint64]int32{}
			for i := range 5000 {
				j, c := tc.pair(i)
				k := placeKey(j, c)
				if _, ok := want[k]; ok {
					continue
				}
				if _, ok := tab.get(k); ok {
					t.Fatalf("pair (%d, %d) found before it was put", j, c)
				}
				want[k] = int32(i)
				tab.put(k, int32(i))
			}
			if tab.n != len(want) {
				t.Errorf("%d entries, want %d", tab.n, len(want))
			}
			for k, p := range want {
				if got, ok := tab.get(k); !ok || got != p {
					t.Errorf("key %#x: place %d, %v; want %d", k, got, ok, p)
				}
			}
			for range 1000 {
				k := placeKey(rng.Int32(), rng.Int32())
				_, inMap := want[k]
				if _, ok := tab.get(k); ok != inMap {
					t.Errorf("key %#x: found %v, want %v", k, ok, inMap)
				}
			}
		})
	}
}
