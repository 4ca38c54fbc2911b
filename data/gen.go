package data

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
)

// GenConfig describes a synthetic multi-label dataset for tests and scaling
// studies. Label popularity follows a power law, as in real XMC data: the
// label of popularity rank r (1-based) is drawn with probability roughly
// proportional to r^-LabelExponent. Feature popularity follows Zipf's law,
// as words do. Every label owns a sparse feature prototype, and an
// instance's features are drawn mostly from its labels' prototypes and
// partly at random, so features carry signal that a trained model can learn
// (a nearest-centroid classifier reaches a precision@1 near 0.9 in the
// tests). Feature values are weights in {0.25, 0.5, 0.75, 1}.
type GenConfig struct {
	N, D, L int // instances, features, labels
	// AvgLabels and AvgFeatures are the mean numbers of labels and of
	// non-zero features per instance. They are met closely when well below
	// the caps of (L+1)/2 labels and (D+1)/2 features per instance.
	AvgLabels, AvgFeatures float64
	// LabelExponent is the power-law exponent of label popularity: 0 gives
	// uniform labels, about 1 is typical of XMC data.
	LabelExponent float64
	// MultiClass gives every instance exactly one label (multi-class data,
	// as PD-Sparse's and MEMOIR's papers train on); AvgLabels must be 1.
	MultiClass bool
	// Seed makes the output reproducible: the same config gives the same
	// bytes on the same platform.
	Seed uint64
}

// genNoise is the fraction of an instance's features drawn from the overall
// feature distribution rather than from its labels' prototypes.
const genNoise = 0.2

// genFeatureExponent is the power-law exponent of feature popularity:
// Zipf's law for words, so frequent features are shared by many labels'
// prototypes and carry little signal, as in real bag-of-words data.
const genFeatureExponent = 1.0

// genZipfTries is how often a label already drawn for an instance is redrawn
// from the power law before falling back to a uniform draw, which bounds the
// work for instances with many labels.
const genZipfTries = 8

// Validate reports every field of c that is out of range.
func (c GenConfig) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.N >= 1, "N=%d: need at least 1 instance", c.N)
	check(c.D >= 1 && c.D <= maxDim, "D=%d: need 1 to %d features", c.D, maxDim)
	check(c.L >= 1 && c.L <= maxDim, "L=%d: need 1 to %d labels", c.L, maxDim)
	check(c.AvgLabels > 0 && c.AvgLabels <= float64(c.L+1)/2,
		"AvgLabels=%v: need 0 < AvgLabels <= (L+1)/2", c.AvgLabels)
	check(c.AvgFeatures >= 1 && c.AvgFeatures <= float64(c.D+1)/2,
		"AvgFeatures=%v: need 1 <= AvgFeatures <= (D+1)/2", c.AvgFeatures)
	check(c.LabelExponent >= 0 && !math.IsInf(c.LabelExponent, 0),
		"LabelExponent=%v: need a finite exponent >= 0", c.LabelExponent)
	check(!c.MultiClass || c.AvgLabels == 1, "AvgLabels=%v: multi-class data has 1 label per instance", c.AvgLabels)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("generator config: %w", err)
	}
	return nil
}

// Generate writes a synthetic dataset in the XMC text format to w. Rows are
// produced one at a time, so the output may be far larger than memory;
// memory use is O(D + L).
func Generate(w io.Writer, cfg GenConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	g := newGenerator(cfg)
	bw := bufio.NewWriterSize(w, bufSize)
	buf := fmt.Appendf(nil, "%d %d %d\n", cfg.N, cfg.D, cfg.L)
	for i := range cfg.N {
		g.next()
		buf = appendRow(buf, g.labels, g.featIDs, g.featVals, 0)
		if len(buf) > 64<<10 || i == cfg.N-1 {
			if _, err := bw.Write(buf); err != nil {
				return fmt.Errorf("generate row %d: %w", i, err)
			}
			buf = buf[:0]
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	return nil
}

// GenerateDataset returns in memory the dataset that Generate would write
// for cfg.
func GenerateDataset(cfg GenConfig) (*Dataset, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := newGenerator(cfg)
	d := &Dataset{
		X: CSR{Rows: cfg.N, Cols: cfg.D, Indptr: make([]int64, 1, cfg.N+1)},
		Y: CSR{Rows: cfg.N, Cols: cfg.L, Indptr: make([]int64, 1, cfg.N+1)},
	}
	for range cfg.N {
		g.next()
		d.X.Indices = append(d.X.Indices, g.featIDs...)
		d.X.Values = append(d.X.Values, g.featVals...)
		d.X.Indptr = append(d.X.Indptr, int64(len(d.X.Indices)))
		d.Y.Indices = append(d.Y.Indices, g.labels...)
		for range g.labels {
			d.Y.Values = append(d.Y.Values, 1)
		}
		d.Y.Indptr = append(d.Y.Indptr, int64(len(d.Y.Indices)))
	}
	return d, nil
}

// generator draws the rows of a synthetic dataset one at a time.
type generator struct {
	cfg       GenConfig
	rng       *rand.Rand
	byRank    []int32 // label id of each popularity rank, a random permutation
	featRank  []int32 // feature id of each popularity rank, likewise
	labelLaw  powerLaw
	featLaw   powerLaw
	protoSize int // features per label prototype

	// seen[id] == stamp marks ids already drawn for the current row: a flat
	// array instead of a set, reset in O(1) by bumping stamp.
	labelSeen, featSeen []uint32
	stamp               uint32

	labels   []int32 // current row, sorted
	featIDs  []int32 // current row, sorted
	featVals []float32
	feats    []genFeature
}

type genFeature struct {
	id int32
	v  float32
}

func newGenerator(cfg GenConfig) *generator {
	// The second PCG word is a fixed stream constant ("xmc-data").
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x786d632d64617461))
	byRank := make([]int32, cfg.L)
	for i := range byRank {
		byRank[i] = int32(i)
	}
	rng.Shuffle(len(byRank), func(i, j int) { byRank[i], byRank[j] = byRank[j], byRank[i] })
	featRank := make([]int32, cfg.D)
	for i := range featRank {
		featRank[i] = int32(i)
	}
	rng.Shuffle(len(featRank), func(i, j int) { featRank[i], featRank[j] = featRank[j], featRank[i] })
	return &generator{
		cfg:       cfg,
		rng:       rng,
		byRank:    byRank,
		featRank:  featRank,
		labelLaw:  newPowerLaw(cfg.L, cfg.LabelExponent),
		featLaw:   newPowerLaw(cfg.D, genFeatureExponent),
		protoSize: max(4, int(math.Ceil(cfg.AvgFeatures))),
		labelSeen: make([]uint32, cfg.L),
		featSeen:  make([]uint32, cfg.D),
	}
}

// next draws the next row into g.labels, g.featIDs and g.featVals.
func (g *generator) next() {
	g.stamp++
	if g.stamp == 0 { // wrapped after 2^32 rows: forget all marks
		clear(g.labelSeen)
		clear(g.featSeen)
		g.stamp = 1
	}
	L, D := g.cfg.L, g.cfg.D

	g.labels = g.labels[:0]
	k := 1
	if !g.cfg.MultiClass {
		k = g.count(g.cfg.AvgLabels, (L+1)/2)
	}
	for len(g.labels) < k {
		l := g.byRank[g.labelLaw.rank(g.rng.Float64())]
		for tries := 1; g.labelSeen[l] == g.stamp; tries++ {
			if tries < genZipfTries {
				l = g.byRank[g.labelLaw.rank(g.rng.Float64())]
			} else {
				l = int32(g.rng.IntN(L))
			}
		}
		g.labelSeen[l] = g.stamp
		g.labels = append(g.labels, l)
	}

	g.feats = g.feats[:0]
	for f := g.count(g.cfg.AvgFeatures, (D+1)/2); len(g.feats) < f; {
		var ft genFeature
		if len(g.labels) > 0 && g.rng.Float64() >= genNoise {
			l := g.labels[g.rng.IntN(len(g.labels))]
			ft = g.prototype(l, g.rng.IntN(g.protoSize))
		} else {
			r := g.featLaw.rank(g.rng.Float64())
			ft = genFeature{id: g.featRank[r], v: g.randomWeight()}
		}
		for g.featSeen[ft.id] == g.stamp { // uniform redraws: at most half are taken
			ft = genFeature{id: int32(g.rng.IntN(D)), v: g.randomWeight()}
		}
		g.featSeen[ft.id] = g.stamp
		g.feats = append(g.feats, ft)
	}

	slices.Sort(g.labels)
	slices.SortFunc(g.feats, func(a, b genFeature) int { return cmp.Compare(a.id, b.id) })
	g.featIDs, g.featVals = g.featIDs[:0], g.featVals[:0]
	for _, ft := range g.feats {
		g.featIDs = append(g.featIDs, ft.id)
		g.featVals = append(g.featVals, ft.v)
	}
}

// count draws how many labels or features a row gets: 1 + Poisson(avg-1)
// when avg >= 1 (so rows are rarely empty), Poisson(avg) otherwise, capped.
func (g *generator) count(avg float64, limit int) int {
	n := 0
	if avg >= 1 {
		n = 1 + g.poisson(avg-1)
	} else {
		n = g.poisson(avg)
	}
	return min(n, limit)
}

// poisson draws from a Poisson distribution with mean lambda: exactly by
// Knuth's product method for small means, by a rounded normal for large ones.
func (g *generator) poisson(lambda float64) int {
	if lambda > 30 {
		return max(0, int(math.Round(lambda+math.Sqrt(lambda)*g.rng.NormFloat64())))
	}
	limit := math.Exp(-lambda)
	n := 0
	for p := g.rng.Float64(); p > limit; p *= g.rng.Float64() {
		n++
	}
	return n
}

// powerLaw draws popularity ranks in [0, n) with probability roughly
// proportional to (rank+1)^-a, by inverting the CDF of the continuous power
// law x^-a on [1, n+1): O(1) time and memory for any n, unlike a table of the
// discrete Zipf distribution (and math/rand's Zipf needs a > 1).
type powerLaw struct {
	n      int
	a      float64
	logTop float64 // log(n+1), for a = 1
	span   float64 // (n+1)^(1-a) - 1, for a != 1
}

func newPowerLaw(n int, a float64) powerLaw {
	top := float64(n + 1)
	return powerLaw{n: n, a: a, logTop: math.Log(top), span: math.Pow(top, 1-a) - 1}
}

// rank maps u, uniform in [0, 1), to a rank.
func (p powerLaw) rank(u float64) int {
	var x float64
	if math.Abs(p.a-1) < 1e-9 {
		x = math.Exp(u * p.logTop)
	} else {
		x = math.Pow(1+u*p.span, 1/(1-p.a))
	}
	return min(max(int(x)-1, 0), p.n-1)
}

// prototype returns feature slot j of label l's prototype, a feature drawn
// from the feature power law and a weight in {0.25, 0.5, 0.75, 1}. It is a
// hash of (Seed, l, j) rather than a stored table, so memory does not grow
// with L × protoSize.
func (g *generator) prototype(l int32, j int) genFeature {
	h := SplitMix64(g.cfg.Seed ^ SplitMix64(uint64(l)<<32|uint64(j)))
	u := float64(h>>11) / (1 << 53) // top 53 bits as a uniform in [0, 1)
	r := g.featLaw.rank(u)
	return genFeature{id: g.featRank[r], v: float32(1+h&3) / 4}
}

// randomWeight returns a feature weight in {0.25, 0.5, 0.75, 1}.
func (g *generator) randomWeight() float32 {
	return float32(1+g.rng.IntN(4)) / 4
}
