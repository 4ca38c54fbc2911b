package pdsparse

import (
	"math/rand/v2"
	"testing"
)

// TestPlaceTable checks the table against Go's map on pairs of every
// shape: hashed, runs of classes on one feature (through many growths),
// runs of features for one class, random pairs, and extreme class ids;
// dense, the pairs of a small range.
func TestPlaceTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const features, classes = 300, 40
	const manyFeatures = 1 << 16
	hashed := func() placeTable { return newPlaceTable(manyFeatures, 1<<31-1, placeDenseLimit) }
	dense := func() placeTable { return newPlaceTable(features, classes, placeDenseLimit) }
	anyPair := func() (int32, int32) { return rng.Int32N(manyFeatures), rng.Int32() }
	smallPair := func() (int32, int32) { return rng.Int32N(features), rng.Int32N(classes) }
	cases := []struct {
		name      string
		table     func() placeTable
		wantDense bool
		pair      func(i int) (int32, int32) // the pairs put
		query     func() (int32, int32)      // pairs looked up
	}{
		{"classes of one feature", hashed, false, func(i int) (int32, int32) { return 7, int32(i) }, anyPair},
		{"features of one class", hashed, false, func(i int) (int32, int32) { return int32(i), 3 }, anyPair},
		{"random", hashed, false, func(int) (int32, int32) { return rng.Int32N(manyFeatures), rng.Int32N(1 << 20) }, anyPair},
		{"extremes", hashed, false, func(i int) (int32, int32) { return int32(i % 3), int32(1<<31 - 1 - i) }, anyPair},
		{"dense", dense, true, func(int) (int32, int32) { return smallPair() }, smallPair},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab := tc.table()
			if (tab.dense != nil) != tc.wantDense {
				t.Fatalf("dense %v, want %v", tab.dense != nil, tc.wantDense)
			}
			want := map[[2]int32]int32{}
			for i := range 5000 {
				j, c := tc.pair(i)
				k := [2]int32{j, c}
				if _, ok := want[k]; ok {
					continue
				}
				if _, ok := tab.get(j, c); ok {
					t.Fatalf("pair (%d, %d) found before it was put", j, c)
				}
				want[k] = int32(i)
				tab.put(j, c, int32(i))
			}
			if n := entries(&tab); n != len(want) {
				t.Errorf("%d entries, want %d", n, len(want))
			}
			for k, p := range want {
				if got, ok := tab.get(k[0], k[1]); !ok || got != p {
					t.Errorf("pair %v: place %d, %v; want %d", k, got, ok, p)
				}
			}
			for range 1000 {
				j, c := tc.query()
				_, inMap := want[[2]int32{j, c}]
				if _, ok := tab.get(j, c); ok != inMap {
					t.Errorf("pair (%d, %d): found %v, want %v", j, c, ok, inMap)
				}
			}
		})
	}
}

// entries returns the number of pairs tab holds.
func entries(tab *placeTable) int {
	n := 0
	for _, p := range tab.dense {
		if p != 0 {
			n++
		}
	}
	for _, c := range tab.count {
		n += int(c)
	}
	return n
}
