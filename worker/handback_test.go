package worker

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/drover-dev/drover"
)

// Issue 42: giving many queues up at once (a rebalance that hands back
// 10,000, a member leaving, a lost session) costs a bounded number of
// goroutines: every loop is told first, the parked ones are run to their
// shutdown by at most stopConcurrency goroutines (shutDownAll), and the
// caller awaits each in turn. Before, every parked loop got a goroutine of
// its own for its shutdown: 2,700 at once in this test. The bound asserted
// is the count before the stop plus stopConcurrency plus 16 (the worker's
// own goroutines that may wake meanwhile).
func TestHandingBackTenThousandQueuesKeepsGoroutinesBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(w *Worker, names []string, each func())
	}{
		{"graceful stop", func(w *Worker, names []string, each func()) {
			w.StopQueues(context.Background(), names, drover.StopLeave, func(q string, err error) {
				if err != nil {
					t.Errorf("%s: %v", q, err)
				}
				each()
			})
		}},
		{"session lost", func(w *Worker, names []string, each func()) {
			// Abort calls nothing back as it awaits: sample while it runs.
			done := make(chan struct{})
			go func() { w.Abort(names...); close(done) }()
			for {
				select {
				case <-done:
					return
				default:
					each()
					runtime.Gosched()
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 10_000
			w := newTestWorker(t, newMemLog(), &scriptedExecutor{}, func(c *Config) { c.Capacity = 16 })
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("q%05d", i)
				if err := w.Start(queueConfig(names[i], nil), &memClaim{}); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "every queue parked", func() bool { return w.loopGoroutines.Load() == 0 })
			before := runtime.NumGoroutine() + 1 // the sampler's
			peak := before
			tc.stop(w, names, func() { peak = max(peak, runtime.NumGoroutine()) })
			if left := len(w.loops()); left != 0 {
				t.Fatalf("want every queue gone, have %d left", left)
			}
			if bound := before + stopConcurrency + 16; peak > bound {
				t.Fatalf("giving %d queues up: goroutines went from %d to %d (bound %d): the stop grows with the queues", n, before, peak, bound)
			}
			t.Logf("goroutines: %d before, at most %d during", before, peak)
		})
	}
}
