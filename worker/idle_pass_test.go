package worker

import (
	"context"
	"fmt"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testkit"
)

// fixedHeadsLog is a memLog whose QueueHeads answers from a map built
// once, so that a measurement of a backstop pass counts the scheduler's
// allocations only, not the fake's answer.
type fixedHeadsLog struct {
	*memLog
	heads map[string]drover.Position
}

func (l *fixedHeadsLog) QueueHeads(context.Context, []string) (map[string]drover.Position, error) {
	return l.heads, nil
}

// parkedWorker returns a worker owning n parked, checked queues whose
// periodic backstop reads heads from a fixedHeadsLog.
func parkedWorker(tb testing.TB, n int) *Worker {
	tb.Helper()
	log := newMemLog()
	fixed := &fixedHeadsLog{memLog: log, heads: make(map[string]drover.Position, n)}
	w, err := New(Config{Member: "m1", Log: fixed, Requeuer: log, Executor: &scriptedExecutor{},
		Clock: testkit.NewClock(t0), PollInterval: DefaultPollInterval})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.AbortAll)
	for i := range n {
		q := fmt.Sprintf("queue-%05d", i)
		fixed.heads[q] = 0
		if err := w.Start(queueConfig(q, nil), &memClaim{}); err != nil {
			tb.Fatal(err)
		}
	}
	testkit.Eventually(tb, "every queue parked and checked", func() bool {
		if w.loopGoroutines.Load() != 0 {
			return false
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, l := range w.queues {
			if !l.checked.Load() {
				return false
			}
		}
		return true
	})
	return w
}

// Defect (issue 14): every periodic backstop pass built two maps of every
// parked queue and a slice of their names (about 2 MB of garbage a second
// at 25,000 queues). A pass now reuses its buffers: its allocations do not
// grow with the parked queues. The scheduler's goroutine waits on the
// fake clock, so the test's passes are the only ones running.
func TestABackstopPassAllocatesNothingPerParkedQueue(t *testing.T) {
	const n = 25000
	w := parkedWorker(t, n)
	w.idle.check(false) // the first pass sizes the buffers
	before := w.idle.checkCount()
	allocs := testing.AllocsPerRun(5, func() { w.idle.check(false) })
	if have := w.idle.checkCount() - before; have < 5 {
		t.Fatalf("want every run to be a heads pass, have %d passes", have)
	}
	// What is left is the pass's context and timer: a handful, whatever n.
	if allocs > 16 {
		t.Fatalf("a periodic pass over %d parked queues: want at most 16 allocations, have %.0f", n, allocs)
	}
}

// BenchmarkBackstopPass reports what one periodic backstop pass over
// 25,000 parked queues allocates (the Log's answer not counted).
func BenchmarkBackstopPass(b *testing.B) {
	w := parkedWorker(b, 25000)
	w.idle.check(false)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.idle.check(false)
	}
}
