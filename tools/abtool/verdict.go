package main

import (
	"fmt"
	"math"
	"slices"
)

// minSamples is the fewest values a side needs before a verdict is read
// from its spread: with two values a side, two disjoint spreads arise from
// noise alone one time in three.
const minSamples = 3

// summary is one side's values of one metric.
type summary struct {
	N                int
	Median, Min, Max float64
}

func summarize(vs []float64) summary {
	if len(vs) == 0 {
		return summary{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return summary{N: len(s), Median: m, Min: s[0], Max: s[len(s)-1]}
}

// comparison is one metric of one benchmark on both sides.
type comparison struct {
	A, B summary
	// Ratio is B's median over A's; NaN when A's median is 0 or a side
	// has no values.
	Ratio float64
	// Measured is true when the spreads are disjoint: every value of one
	// side lies beyond every value of the other.
	Measured bool
	Verdict  string
}

// compare judges B against A by the project's rule: a difference whose
// min–max spreads overlap is noise, and its verdict is "not measured". Only
// disjoint spreads, with at least minSamples values a side, give a verdict,
// which names the direction and the ratio of the medians. Two sides that
// gave one identical value every time (allocs/op, a count) are "same".
func compare(a, b []float64) comparison {
	c := comparison{A: summarize(a), B: summarize(b), Ratio: math.NaN()}
	switch {
	case c.A.N == 0 && c.B.N == 0:
		c.Verdict = "no values"
		return c
	case c.A.N == 0:
		c.Verdict = "only in B"
		return c
	case c.B.N == 0:
		c.Verdict = "only in A"
		return c
	}
	if c.A.Median != 0 {
		c.Ratio = c.B.Median / c.A.Median
	}
	switch {
	case c.A.Min == c.A.Max && c.B.Min == c.B.Max && c.A.Min == c.B.Min:
		c.Verdict = "same"
	case c.A.N < minSamples || c.B.N < minSamples:
		c.Verdict = fmt.Sprintf("not measured (fewer than %d values a side)", minSamples)
	case c.A.Min <= c.B.Max && c.B.Min <= c.A.Max:
		c.Verdict = "not measured (spreads overlap)"
	case c.B.Median > c.A.Median:
		c.Measured = true
		c.Verdict = "B higher" + ratioText(c.Ratio)
	default:
		c.Measured = true
		c.Verdict = "B lower" + ratioText(c.Ratio)
	}
	return c
}

func ratioText(r float64) string {
	if math.IsNaN(r) {
		return " (spreads disjoint)"
	}
	return fmt.Sprintf(" by %.1f%% (spreads disjoint)", math.Abs(r-1)*100)
}

// chanceOfDisjoint is the probability that n values of A and m of B, all
// drawn from one distribution, give disjoint spreads: of the C(n+m, n)
// equally likely orders of the pooled values, two put one side wholly
// below the other. It is the rank-sum test's most extreme outcome, so a
// verdict of this tool is that test at this level.
func chanceOfDisjoint(n, m int) float64 {
	if n == 0 || m == 0 {
		return 1
	}
	orders := 1.0 // C(n+m, n)
	for i := 1; i <= n; i++ {
		orders = orders * float64(m+i) / float64(i)
	}
	return math.Min(1, 2/orders)
}
