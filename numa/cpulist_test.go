package numa

import (
	"slices"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "\n", want: nil},
		{in: "0", want: []int{0}},
		{in: "0-3,8,10-11", want: []int{0, 1, 2, 3, 8, 10, 11}},
		{in: " 0-1\n", want: []int{0, 1}},
		{in: "5-5", want: []int{5}},
		{in: "3,1,1-2", want: []int{1, 2, 3}},
		{in: "0-7,16-23", want: []int{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23}},
		{in: "a", wantErr: true},
		{in: "1-", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "+1", wantErr: true},
		{in: "3-1", wantErr: true},
		{in: "1,,2", wantErr: true},
		{in: "1,", wantErr: true},
		{in: "1-2-3", wantErr: true},
		{in: "0-7:2", wantErr: true},
		{in: "0-70000", wantErr: true},
		{in: "99999999999999999999", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseCPUList(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseCPUList(%q) = %v, want error", tt.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseCPUList(%q): %v", tt.in, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ParseCPUList(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFormatCPUList(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{in: nil, want: ""},
		{in: []int{4}, want: "4"},
		{in: []int{0, 1, 2, 3, 8, 10, 11}, want: "0-3,8,10-11"},
		{in: []int{11, 10, 3, 2, 1, 0, 8, 8}, want: "0-3,8,10-11"},
		{in: []int{0, 2, 4}, want: "0,2,4"},
	}
	for _, tt := range tests {
		got := FormatCPUList(tt.in)
		if got != tt.want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := ParseCPUList(got)
		if err != nil {
			t.Errorf("ParseCPUList(FormatCPUList(%v)): %v", tt.in, err)
		}
		if want := slices.Compact(slices.Sorted(slices.Values(tt.in))); !slices.Equal(back, want) {
			t.Errorf("ParseCPUList(%q) = %v, want %v", got, back, want)
		}
	}
}
