package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// BenchmarkOutcomeRecordsInline: inline no-op tasks/s with outcome records
// off and on (the default, 24h), alternating in the same run so that both
// see the same machine. Records ride with the trim after each commit, so
// "on" should cost little: cost = 1 − on/off.
func BenchmarkOutcomeRecordsInline(b *testing.B) {
	const n, concurrency, pairs = 50000, 16, 3
	r := newRuntimeRig(b, concurrency)
	off := drover.Duration(0)
	var dOff, dOn time.Duration
	for i := 0; i < b.N; i++ {
		for p := 0; p < pairs; p++ {
			for _, on := range []bool{p%2 == 0, p%2 != 0} { // alternate which goes first
				qc := drover.QueueConfig{Name: fmt.Sprintf("outcomes-%v-%d-%d", on, i, p), Concurrency: concurrency,
					Tasks: map[string]drover.TaskRoute{"bench.noop": {Inline: true}}}
				if !on {
					qc.Outcomes.Retention = &off
				}
				d := r.runQueue(b, qc, "bench.noop", n)
				if on {
					dOn += d
				} else {
					dOff += d
				}
			}
		}
	}
	total := float64(n * pairs * b.N)
	offRate, onRate := total/dOff.Seconds(), total/dOn.Seconds()
	b.ReportMetric(offRate, "off-tasks/s")
	b.ReportMetric(onRate, "on-tasks/s")
	b.ReportMetric(1-onRate/offRate, "cost")
}
