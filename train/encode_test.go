package train

import (
	"fmt"
	"testing"

	"xmc/numa"
)

// TestEncodeUnits checks that every unit is encoded once, in its place
// and with its id, on 1 to 3 workers, and that of several failing units
// the first in the units' order gives the error, whichever worker failed
// first.
func TestEncodeUnits(t *testing.T) {
	topo, err := numa.Detect()
	if err != nil {
		t.Fatal(err)
	}
	units := []int{4, 9, 11, 20, 21}
	tests := []struct {
		name    string
		failing []int // indices into units whose encoding fails
		wantErr string
	}{
		{"all encoded", nil, ""},
		{"one fails", []int{3}, "unit 20 failed"},
		{"first of two failures", []int{4, 1}, "unit 9 failed"},
	}
	for _, tt := range tests {
		for _, workers := range []int{1, 2, 3} {
			pool, err := numa.NewPool(topo, workers, numa.Options{})
			if err != nil {
				t.Fatal(err)
			}
			calls := make([]int, len(units))
			var got []byte
			err = pool.Together(func(team *numa.Team) error {
				res, err := EncodeUnits(team, units, func(_ numa.Worker, i int) ([]byte, error) {
					calls[i]++
					for _, f := range tt.failing {
						if f == i {
							return nil, fmt.Errorf("unit %d failed", units[i])
						}
					}
					return []byte{byte(units[i])}, nil
				})
				for i, r := range res {
					if r.Unit != units[i] {
						return fmt.Errorf("result %d is unit %d, want %d", i, r.Unit, units[i])
					}
					got = append(got, r.Data...)
				}
				return err
			})
			pool.Close()
			for i, n := range calls {
				if n != 1 {
					t.Errorf("%s, %d workers: unit %d encoded %d times", tt.name, workers, units[i], n)
				}
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("%s, %d workers: %v", tt.name, workers, err)
			case tt.wantErr == "" && string(got) != string([]byte{4, 9, 11, 20, 21}):
				t.Errorf("%s, %d workers: data %v", tt.name, workers, got)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Errorf("%s, %d workers: error %v, want %q", tt.name, workers, err, tt.wantErr)
			}
		}
	}
}
