package web

import (
	"strings"
	"testing"
	"time"
)

// A chart has a y axis from 0 to a round maximum with the unit, and a time
// axis with the first and last sample's times; too few points say so.
func TestChartHasAxesAndUnits(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	svg := string(chart("lag", "messages", []point{{t0, 0}, {t0.Add(10 * time.Second), 3}, {t0.Add(20 * time.Second), 5}}))
	for _, want := range []string{`>messages<`, `>0<`, `>2<`, `>8<`, `>03:04:05<`, `>03:04:25<`, `time (UTC)`, `<polyline class="series"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart: want %q in\n%s", want, svg)
		}
	}
	if svg := string(chart("lag", "messages", []point{{t0, 1}})); !strings.Contains(svg, "collecting samples") {
		t.Errorf("one point: want a placeholder, have %s", svg)
	}
	for v, want := range map[float64]float64{0: 1, 0.3: 0.5, 1.25: 2, 7: 10, 120: 200} {
		if have := niceCeil(v); have != want {
			t.Errorf("niceCeil(%v): want %v, have %v", v, want, have)
		}
	}
}
