package data

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestGenConfigValidate(t *testing.T) {
	ok := GenConfig{N: 10, D: 100, L: 20, AvgLabels: 2, AvgFeatures: 5, LabelExponent: 1}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	tests := []struct {
		name string
		edit func(c *GenConfig)
		want string
	}{
		{"N", func(c *GenConfig) { c.N = 0 }, "N=0: need at least 1 instance"},
		{"D", func(c *GenConfig) { c.D = -3 }, "D=-3: need 1 to 2147483647 features"},
		{"L", func(c *GenConfig) { c.L = 1 << 31 }, "L=2147483648: need 1 to 2147483647 labels"},
		{"AvgLabels zero", func(c *GenConfig) { c.AvgLabels = 0 }, "AvgLabels=0: need 0 < AvgLabels <= (L+1)/2"},
		{"AvgLabels above cap", func(c *GenConfig) { c.AvgLabels = 11 }, "AvgLabels=11: need"},
		{"AvgLabels NaN", func(c *GenConfig) { c.AvgLabels = math.NaN() }, "AvgLabels=NaN: need"},
		{"AvgFeatures", func(c *GenConfig) { c.AvgFeatures = 0.5 }, "AvgFeatures=0.5: need 1 <= AvgFeatures <= (D+1)/2"},
		{"LabelExponent", func(c *GenConfig) { c.LabelExponent = -1 }, "LabelExponent=-1: need a finite exponent >= 0"},
		{"LabelExponent Inf", func(c *GenConfig) { c.LabelExponent = math.Inf(1) }, "LabelExponent=+Inf: need"},
		{"MultiClass with 2 labels", func(c *GenConfig) { c.MultiClass = true }, "AvgLabels=2: multi-class data has 1 label per instance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want it to contain %q", err, tt.want)
			}
			if err := Generate(&bytes.Buffer{}, c); err == nil {
				t.Error("Generate accepted the config")
			}
			if _, err := GenerateDataset(c); err == nil {
				t.Error("GenerateDataset accepted the config")
			}
		})
	}
}

// TestGenerateDeterministic checks that a seed fixes the output, that
// Generate and GenerateDataset agree, and that the text is valid XMC.
func TestGenerateDeterministic(t *testing.T) {
	cfg := GenConfig{N: 2000, D: 1000, L: 300, AvgLabels: 3, AvgFeatures: 20, LabelExponent: 1, Seed: 42}
	var a, b, c bytes.Buffer
	if err := Generate(&a, cfg); err != nil {
		t.Fatal(err)
	}
	if err := Generate(&b, cfg); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two runs with the same seed differ")
	}
	other := cfg
	other.Seed++
	if err := Generate(&c, other); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Error("seeds 42 and 43 give the same data")
	}
	got, err := Read(&a, "generated", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, got)
	want, err := GenerateDataset(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, want)
	checkEqual(t, got, want)
}

// TestGenerateShape checks the means and the power law of label popularity:
// the log-log slope of label frequency against rank should be about
// -LabelExponent.
func TestGenerateShape(t *testing.T) {
	for _, tt := range []struct {
		exponent            float64
		avgLabels, avgFeats float64
	}{
		{0, 4, 30},
		{1, 4, 30},
		{1.5, 1.5, 60},
		{1, 0.5, 8},
	} {
		cfg := GenConfig{N: 20000, D: 5000, L: 2000, AvgLabels: tt.avgLabels, AvgFeatures: tt.avgFeats, LabelExponent: tt.exponent, Seed: 7}
		d, err := GenerateDataset(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d.N() != cfg.N || d.D() != cfg.D || d.L() != cfg.L {
			t.Errorf("%+v: shape %d×%d/%d", cfg, d.N(), d.D(), d.L())
		}
		gotL := float64(d.Y.NNZ()) / float64(d.N())
		gotF := float64(d.X.NNZ()) / float64(d.N())
		if math.Abs(gotL-cfg.AvgLabels) > 0.03*cfg.AvgLabels || math.Abs(gotF-cfg.AvgFeatures) > 0.03*cfg.AvgFeatures {
			t.Errorf("%+v: %.3f labels and %.3f features per instance", cfg, gotL, gotF)
		}
		counts := make([]float64, d.L())
		for _, l := range d.Y.Indices {
			counts[l]++
		}
		slices.Sort(counts)
		slices.Reverse(counts)
		// Least-squares slope of log(count) on log(rank) over ranks 10..500,
		// where counts are large enough to be stable.
		var sx, sy, sxx, sxy, n float64
		for r := 10; r <= 500; r++ {
			x, y := math.Log(float64(r)), math.Log(max(counts[r-1], 1))
			sx, sy, sxx, sxy, n = sx+x, sy+y, sxx+x*x, sxy+x*y, n+1
		}
		slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
		if math.Abs(slope+tt.exponent) > 0.15 {
			t.Errorf("%+v: log-log slope of label frequency %.3f, want about %v", cfg, slope, -tt.exponent)
		}
	}
}

// TestGenerateMultiClass checks that multi-class data gives every instance
// exactly one label, with the label frequencies' power law, and that
// Generate writes what GenerateDataset returns.
func TestGenerateMultiClass(t *testing.T) {
	cfg := GenConfig{N: 20000, D: 5000, L: 2000, AvgLabels: 1, AvgFeatures: 8, LabelExponent: 1, MultiClass: true, Seed: 3}
	d, err := GenerateDataset(cfg)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]float64, d.L())
	for i := range d.N() {
		labels, _ := d.Y.Row(i)
		if len(labels) != 1 {
			t.Fatalf("row %d has %d labels", i, len(labels))
		}
		counts[labels[0]]++
	}
	slices.Sort(counts)
	slices.Reverse(counts)
	// The most frequent class against the 100th: about 100 under a power
	// law of exponent 1; uniform labels would give about 1.
	if r := counts[0] / counts[99]; r < 30 {
		t.Errorf("top class %v rows, 100th %v: not a power law", counts[0], counts[99])
	}
	var buf bytes.Buffer
	if err := Generate(&buf, cfg); err != nil {
		t.Fatal(err)
	}
	read, err := Read(&buf, "gen", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(read.Y.Indices, d.Y.Indices) || !slices.Equal(read.X.Indices, d.X.Indices) {
		t.Error("Generate and GenerateDataset differ")
	}
}

// TestGenerateSignal checks that features predict labels: a nearest-centroid
// classifier trained on part of a generated set must beat, by far, always
// predicting the most frequent label.
func TestGenerateSignal(t *testing.T) {
	cfg := GenConfig{N: 6000, D: 2000, L: 200, AvgLabels: 3, AvgFeatures: 25, LabelExponent: 1, Seed: 11}
	d, err := GenerateDataset(cfg)
	if err != nil {
		t.Fatal(err)
	}
	NormalizeRows(&d.X)
	const nTrain = 5000
	centroid := make([]float64, cfg.L*cfg.D)
	freq := make([]int, cfg.L)
	for i := range nTrain {
		labels, _ := d.Y.Row(i)
		idx, val := d.X.Row(i)
		for _, l := range labels {
			freq[l]++
			for k, j := range idx {
				centroid[int(l)*cfg.D+int(j)] += float64(val[k])
			}
		}
	}
	for l := range cfg.L {
		c := centroid[l*cfg.D : (l+1)*cfg.D]
		var s float64
		for _, v := range c {
			s += v * v
		}
		if s > 0 {
			for j := range c {
				c[j] /= math.Sqrt(s)
			}
		}
	}
	top := int32(slices.Index(freq, slices.Max(freq)))
	var hits, baseline int
	for i := nTrain; i < cfg.N; i++ {
		labels, _ := d.Y.Row(i)
		idx, val := d.X.Row(i)
		best, bestScore := int32(-1), math.Inf(-1)
		for l := range cfg.L {
			var s float64
			for k, j := range idx {
				s += float64(val[k]) * centroid[l*cfg.D+int(j)]
			}
			if s > bestScore {
				best, bestScore = int32(l), s
			}
		}
		if slices.Contains(labels, best) {
			hits++
		}
		if slices.Contains(labels, top) {
			baseline++
		}
	}
	p1 := float64(hits) / float64(cfg.N-nTrain)
	base := float64(baseline) / float64(cfg.N-nTrain)
	t.Logf("nearest-centroid P@1 %.3f, most-frequent-label P@1 %.3f", p1, base)
	if p1 < 0.5 || p1 < 2*base {
		t.Errorf("nearest-centroid P@1 %.3f, most-frequent-label P@1 %.3f: features carry too little signal", p1, base)
	}
}

func BenchmarkGenerate(b *testing.B) {
	cfg := GenConfig{N: 10000, D: 100000, L: 10000, AvgLabels: 5, AvgFeatures: 50, LabelExponent: 1, Seed: 1}
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := Generate(&buf, cfg); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(buf.Len()))
	}
}
