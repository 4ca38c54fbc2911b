package train_test

import (
	"slices"
	"testing"
	"xmc/train"
)

func TestLabelBlocks(t *testing.T) {
	tests := []struct {
		counts  []int64
		perUnit int
		want    [][]int32
	}{
		{[]int64{3, 9, 1, 9, 0}, 2, [][]int32{{1, 3}, {0, 2}}},
		{[]int64{0, 2, 0, 1, 0}, 1, [][]int32{{1}, {3}}},
		{[]int64{0, 0}, 3, nil},
		{[]int64{5, 5, 5}, 3, [][]int32{{0, 1, 2}}},
		{[]int64{1, 2, 3}, 1, [][]int32{{2}, {1}, {0}}},
		{[]int64{1, 2}, 10, [][]int32{{1, 0}}},
		{nil, 4, nil},
	}
	for _, tc := range tests {
		got := train.LabelBlocks(tc.counts, tc.perUnit)
		if !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("train.LabelBlocks(%v, %d) = %v, want %v", tc.counts, tc.perUnit, got, tc.want)
		}
	}
}
