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

// TestDealtBlocks checks that the labels with a positive are dealt into
// blocks by decreasing frequency in turn (ties by label id), each block
// sorted, and that there are no more blocks than such labels.
func TestDealtBlocks(t *testing.T) {
	tests := []struct {
		counts []int64
		n      int
		want   [][]int32
	}{
		// By frequency 2, 5, 0, 7, 3, 4, dealt to 3 blocks in turn.
		{[]int64{5, 0, 9, 1, 1, 7, 0, 3}, 3, [][]int32{{2, 7}, {3, 5}, {0, 4}}},
		{[]int64{5, 0, 9, 1, 1, 7, 0, 3}, 1, [][]int32{{0, 2, 3, 4, 5, 7}}},
		{[]int64{5, 0, 9, 1, 1, 7, 0, 3}, 100, [][]int32{{2}, {5}, {0}, {7}, {3}, {4}}},
		{[]int64{4, 4, 4, 4}, 2, [][]int32{{0, 2}, {1, 3}}},
		{[]int64{0, 0}, 3, nil},
		{nil, 2, nil},
		{[]int64{1}, 0, nil},
	}
	for _, tc := range tests {
		got := train.DealtBlocks(tc.counts, tc.n)
		if !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("train.DealtBlocks(%v, %d) = %v, want %v", tc.counts, tc.n, got, tc.want)
		}
	}
}
