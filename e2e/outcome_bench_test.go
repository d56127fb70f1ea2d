package e2e

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// BenchmarkOutcomeRecordsInline: inline no-op tasks/s with outcome records
// off and on (the default, 24h), in back-to-back pairs on the same worker,
// Redis and ZooKeeper (which goes first alternates). Records ride with the
// trim after each commit. cost is the median over the pairs of 1 − on/off,
// so that a burst of other work on the machine spoils one pair, not the
// figure; the rates are over all runs.
func BenchmarkOutcomeRecordsInline(b *testing.B) {
	const n, concurrency, pairs = 25000, 16, 7
	r := newRuntimeRig(b, concurrency)
	off := drover.Duration(0)
	var dOff, dOn time.Duration
	var costs []float64
	for i := 0; i < b.N; i++ {
		for p := 0; p < pairs; p++ {
			var pairOff, pairOn time.Duration
			for _, on := range []bool{p%2 == 0, p%2 != 0} {
				qc := drover.QueueConfig{Name: fmt.Sprintf("outcomes-%v-%d-%d", on, i, p), Concurrency: concurrency,
					Tasks: map[string]drover.TaskRoute{"bench.noop": {Inline: true}}}
				if !on {
					qc.Outcomes.Retention = &off
				}
				d := r.runQueue(b, qc, "bench.noop", n)
				if on {
					pairOn += d
				} else {
					pairOff += d
				}
			}
			dOff, dOn = dOff+pairOff, dOn+pairOn
			costs = append(costs, 1-pairOff.Seconds()/pairOn.Seconds())
		}
	}
	total := float64(n * pairs * b.N)
	sort.Float64s(costs)
	b.ReportMetric(total/dOff.Seconds(), "off-tasks/s")
	b.ReportMetric(total/dOn.Seconds(), "on-tasks/s")
	b.ReportMetric(costs[len(costs)/2], "cost")
}
