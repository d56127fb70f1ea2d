package main

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// median returns the median of xs (the mean of the middle two for an even
// count); NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rate returns n per elapsed second.
func rate(n int, elapsed time.Duration) float64 { return float64(n) / elapsed.Seconds() }

// human formats a rate or count with thousands separators and a sensible
// number of digits.
func human(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 1000:
		return thousands(int64(math.Round(v)))
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// seconds formats a duration in seconds with two decimals.
func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// mib formats bytes as MiB with one decimal.
func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
