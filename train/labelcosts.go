package train

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// LabelCosts are the measured costs of a one-vs-all training's labels, by
// their place in the order the trainers take them (most frequent first,
// over the labels with a positive row): strata of consecutive labels, each
// with its core-seconds a label, as xmc-bench project measures them and
// writes them (label-costs-ALGO.txt). Given with --label-range PART/PARTS
// (xmc train --label-costs), they cut the parts by measured cost instead of
// the trainer's estimate from a label's positives, which no one form makes
// right everywhere: how much of a label's time goes to scanning the data
// rather than to its active rows differs from set to set and from machine
// to machine (docs/scaling/amazon-670k.md).
type LabelCosts struct {
	// Path is the file the costs were read from, for errors.
	Path   string
	Strata []LabelStratum
}

// LabelStratum is labels From to To (excluded) of the order, each costing
// PerLabel core-seconds.
type LabelStratum struct {
	From, To int
	PerLabel float64
}

// Labels returns how many labels c covers.
func (c *LabelCosts) Labels() int { return c.Strata[len(c.Strata)-1].To }

// PerLabel returns the cost of the label at place rank of the order:
// linear in ln(1 + rank) between the strata's middle labels, and a
// stratum's own cost before the first middle and after the last. (The
// strata grow geometrically, so a label's cost changes smoothly in the
// logarithm of its place; a cost constant over each stratum would make
// parts inside one stratum, of equal labels, as unequal as its two ends.)
func (c *LabelCosts) PerLabel(rank int) float64 {
	s := c.Strata
	x := math.Log1p(float64(rank))
	middle := func(k int) float64 { return math.Log1p(float64(s[k].From+s[k].To) / 2) }
	k := sort.Search(len(s), func(k int) bool { return middle(k) >= x }) // the first middle at or after rank
	switch k {
	case 0:
		return s[0].PerLabel
	case len(s):
		return s[len(s)-1].PerLabel
	}
	x0, x1 := middle(k-1), middle(k)
	return s[k-1].PerLabel + (s[k].PerLabel-s[k-1].PerLabel)*(x-x0)/(x1-x0)
}

// ReadLabelCosts reads a label-costs file: lines "FROM TO CORE-S" of
// strata that follow each other from label 0, with a cost a label of 0 or
// more, above 0 in one at least, and comment lines that start with #.
func ReadLabelCosts(path string) (*LabelCosts, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("label costs: %w", err)
	}
	defer f.Close()
	c := &LabelCosts{Path: path}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		s, err := parseStratum(text)
		if err == nil && s.From != c.next() {
			err = fmt.Errorf("the stratum starts at label %d, want %d, where the one before ends", s.From, c.next())
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		c.Strata = append(c.Strata, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(c.Strata) == 0 {
		return nil, fmt.Errorf("%s: no stratum: want lines FROM TO CORE-S (xmc-bench project's label-costs file)", path)
	}
	if !slices.ContainsFunc(c.Strata, func(s LabelStratum) bool { return s.PerLabel > 0 }) {
		return nil, fmt.Errorf("%s: every stratum costs 0: want a cost above 0 in one at least", path)
	}
	return c, nil
}

// next is the label the next stratum of c starts at.
func (c *LabelCosts) next() int {
	if len(c.Strata) == 0 {
		return 0
	}
	return c.Labels()
}

func parseStratum(text string) (LabelStratum, error) {
	fields := strings.Fields(text)
	bad := fmt.Errorf("want FROM TO CORE-S: labels FROM to TO (excluded) of the order, most frequent first, and the core-seconds a label, 0 or more; got %q", text)
	if len(fields) != 3 {
		return LabelStratum{}, bad
	}
	from, err1 := strconv.Atoi(fields[0])
	to, err2 := strconv.Atoi(fields[1])
	per, err3 := strconv.ParseFloat(fields[2], 64)
	if err1 != nil || err2 != nil || err3 != nil || from < 0 || to <= from || !(per >= 0) || math.IsInf(per, 0) {
		return LabelStratum{}, bad
	}
	return LabelStratum{From: from, To: to, PerLabel: per}, nil
}

// WriteLabelCosts writes c as ReadLabelCosts reads it, after the comment
// lines of about (without their #).
func WriteLabelCosts(w io.Writer, c *LabelCosts, about ...string) error {
	for _, a := range about {
		fmt.Fprintf(w, "# %s\n", a)
	}
	fmt.Fprintln(w, "# from to core-s/label")
	for _, s := range c.Strata {
		if _, err := fmt.Fprintf(w, "%d %d %.6g\n", s.From, s.To, s.PerLabel); err != nil {
			return err
		}
	}
	return nil
}
