package web

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"
)

// point is one value of a chart's series at a time.
type point struct {
	At time.Time
	V  float64
}

// Chart geometry (SVG user units): the plot area sits inside margins that
// hold the axes' labels.
const (
	chartW, chartH           = 460.0, 180.0
	chartLeft, chartRight    = 56.0, 12.0
	chartTop, chartBottom    = 22.0, 34.0
	chartYTicks              = 4
	chartMinPoints           = 2
	chartTimeFormat          = "15:04:05"
	chartCollectingMessage   = "collecting samples…"
	chartNoPointsPlaceholder = `<svg class="chart" viewBox="0 0 460 180" role="img" aria-label="%s"><text x="230" y="90" text-anchor="middle">` + chartCollectingMessage + `</text></svg>`
)

// chart draws a series as an SVG line chart with a labelled y axis (0 to
// a rounded maximum, in unit) and a time axis (UTC, first, middle and last
// sample), server-side: no script. title labels it for screen readers.
func chart(title, unit string, pts []point) template.HTML {
	esc := template.HTMLEscapeString
	if len(pts) < chartMinPoints {
		return template.HTML(fmt.Sprintf(chartNoPointsPlaceholder, esc(title)))
	}
	hi := 0.0
	for _, p := range pts {
		hi = max(hi, p.V)
	}
	step := niceCeil(hi / chartYTicks) // round ticks: 0, step, 2·step…
	top := step * chartYTicks
	t0, t1 := pts[0].At, pts[len(pts)-1].At
	span := t1.Sub(t0).Seconds()
	if span <= 0 {
		span = 1
	}
	pw, ph := chartW-chartLeft-chartRight, chartH-chartTop-chartBottom
	x := func(t time.Time) float64 { return chartLeft + t.Sub(t0).Seconds()/span*pw }
	y := func(v float64) float64 { return chartTop + ph - max(v, 0)/top*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="%s">`, chartW, chartH, esc(title))
	// y axis: gridlines and labels with the unit.
	for i := 0; i <= chartYTicks; i++ {
		v := top * float64(i) / chartYTicks
		yy := y(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, chartLeft, yy, chartW-chartRight, yy)
		fmt.Fprintf(&b, `<text class="ylabel" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, chartLeft-4, yy+4, esc(fmtTick(v)))
	}
	fmt.Fprintf(&b, `<text class="unit" x="4" y="12">%s</text>`, esc(unit))
	// axes
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, chartLeft, chartTop, chartLeft, chartTop+ph)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, chartLeft, chartTop+ph, chartW-chartRight, chartTop+ph)
	// time axis: first, middle, last
	for i, t := range []time.Time{t0, t0.Add(t1.Sub(t0) / 2), t1} {
		anchor := []string{"start", "middle", "end"}[i]
		fmt.Fprintf(&b, `<text class="xlabel" x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, x(t), chartTop+ph+14, anchor, t.UTC().Format(chartTimeFormat))
	}
	fmt.Fprintf(&b, `<text class="xunit" x="%.1f" y="%.1f" text-anchor="middle">time (UTC)</text>`, chartLeft+pw/2, chartH-4)
	var line strings.Builder
	for _, p := range pts {
		fmt.Fprintf(&line, "%.1f,%.1f ", x(p.At), y(p.V))
	}
	fmt.Fprintf(&b, `<polyline class="series" points="%s"/>`, strings.TrimSpace(line.String()))
	last := pts[len(pts)-1]
	fmt.Fprintf(&b, `<circle class="last" cx="%.1f" cy="%.1f" r="3"><title>%s %s at %s</title></circle>`, x(last.At), y(last.V), esc(fmtTick(last.V)), esc(unit), last.At.UTC().Format(chartTimeFormat))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for 0), so
// that the y axis' ticks are round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

// fmtTick writes an axis value: whole numbers plainly, k and M for large
// ones, one or two decimals for small ones.
func fmtTick(v float64) string {
	switch {
	case v >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case v >= 1e4:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return trimZero(fmt.Sprintf("%.1f", v))
	}
	return trimZero(fmt.Sprintf("%.2f", v))
}

func trimZero(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
