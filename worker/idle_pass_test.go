package worker

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// reusingCheckLog is a memLog whose CheckQueues answers in a buffer it
// reuses (every queue checked, nothing ready), so that a measurement of a
// full backstop pass counts the scheduler's allocations only: the queue
// package's CheckQueues allocates its answer, one slice a call.
type reusingCheckLog struct {
	*memLog
	checks []drover.QueueCheck
}

func (l *reusingCheckLog) CheckQueues(_ context.Context, queues []string, _ []drover.Position) ([]drover.QueueCheck, error) {
	l.checks = l.checks[:0]
	for _, q := range queues {
		l.checks = append(l.checks, drover.QueueCheck{Queue: q})
	}
	return l.checks, nil
}

// parkedWorker returns a worker owning n parked, checked queues. Its
// periodic backstop reads heads from a memLog, which appends them to the
// buffer it is given, as the queue package's QueueHeads does.
func parkedWorker(tb testing.TB, n int) *Worker {
	tb.Helper()
	log := &reusingCheckLog{memLog: newMemLog()}
	w, err := New(Config{Member: "m1", Store: log, Executor: &scriptedExecutor{},
		Clock: testkit.NewClock(t0), PollInterval: DefaultPollInterval})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.AbortAll)
	for i := range n {
		q := fmt.Sprintf("queue-%05d", i)
		if err := w.Start(queueConfig(q, nil), &memClaim{}); err != nil {
			tb.Fatal(err)
		}
	}
	testkit.Eventually(tb, "every queue parked and checked", func() bool {
		return w.loopGoroutines.Load() == 0 && everyQueueChecked(w)
	})
	settleScheduler(tb, w)
	return w
}

// settleScheduler returns once the worker's routes are written and the
// idle scheduler's goroutine has checked the queues routed (a queue is
// checked again once its wake-ups are routed here) and waits on the clock:
// a test that then runs passes itself runs the only ones.
func settleScheduler(tb testing.TB, w *Worker) {
	tb.Helper()
	w.routes.wait() // every re-check asked for
	s := w.idle
	testkit.Eventually(tb, "the re-checks taken", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.fresh) == 0
	})
	s.mu.Lock()
	p := s.passes
	s.mu.Unlock()
	s.poke() // one more pass, with nothing to do, after the one under way
	testkit.Eventually(tb, "the scheduler's pass ended", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.passes > p
	})
}

// passCost returns the allocations and bytes of one run of pass, the
// average of runs after a first that sizes the buffers.
func passCost(runs int, pass func()) (allocs, bytes float64) {
	pass()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	allocs = testing.AllocsPerRun(runs, pass) // itself runs pass once more first
	runtime.ReadMemStats(&after)
	return allocs, float64(after.TotalAlloc-before.TotalAlloc) / float64(runs+1)
}

// Defect (issue 14): every periodic backstop pass built two maps of every
// parked queue and a slice of their names (about 2 MB of garbage a second
// at 25,000 queues), and the Log's heads read answered with a map of every
// queue (1.3 MB a pass more). A pass now reuses its buffers and the Log
// appends the heads to one of them: neither its allocations nor its bytes
// grow with the parked queues. The scheduler's goroutine waits on the fake
// clock, so the test's passes are the only ones running.
func TestABackstopPassAllocatesNothingPerParkedQueue(t *testing.T) {
	const n = 25000
	w := parkedWorker(t, n)
	before := w.idle.checkCount()
	allocs, bytes := passCost(5, func() { w.idle.check(false) })
	if have := w.idle.checkCount() - before; have < 7 {
		t.Fatalf("want every run to be a heads pass, have %d passes", have)
	}
	// What is left is the pass's context and timer: a handful, whatever n.
	if allocs > 16 || bytes > n {
		t.Fatalf("a periodic pass over %d parked queues: want at most 16 allocations and a byte a queue, have %.0f allocations, %.0f bytes", n, allocs, bytes)
	}
}

// Defect (issue 14): a full backstop pass (queues just started, missed
// wake-ups) built a map of every parked queue's offset and one of its loop
// for CheckQueues: 295 allocations, 3.9 MB at 25,000 queues. It now passes
// the queues and offsets in the pass's buffers and matches the checks by
// position.
func TestAFullBackstopPassAllocatesNothingPerParkedQueue(t *testing.T) {
	const n = 25000
	w := parkedWorker(t, n)
	before := w.idle.checkCount()
	allocs, bytes := passCost(5, func() { w.idle.check(true) })
	if have := w.idle.checkCount() - before; have < 7 {
		t.Fatalf("want every run to be a full pass, have %d passes", have)
	}
	if allocs > 16 || bytes > n {
		t.Fatalf("a full pass over %d parked queues: want at most 16 allocations and a byte a queue, have %.0f allocations, %.0f bytes", n, allocs, bytes)
	}
}

// BenchmarkBackstopPass reports what one periodic backstop pass over
// 25,000 parked queues allocates, the fake Log's answer included (it
// appends to the pass's buffer, as the queue package's does).
func BenchmarkBackstopPass(b *testing.B) {
	w := parkedWorker(b, 25000)
	w.idle.check(false)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.idle.check(false)
	}
}

// BenchmarkFullBackstopPass reports what one full backstop pass over
// 25,000 parked queues allocates (the Log's answer not counted).
func BenchmarkFullBackstopPass(b *testing.B) {
	w := parkedWorker(b, 25000)
	w.idle.check(true)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.idle.check(true)
	}
}

// The full pass matches checks to queues by position, so a Log that
// answers short or out of order fails the pass (its queues wait for the
// next) rather than marking the wrong queues checked.
func TestChecksMustComeInTheOrderAsked(t *testing.T) {
	queues := []string{"a", "b", "c"}
	for _, c := range []struct {
		name  string
		res   []string
		valid bool
	}{
		{"in order", []string{"a", "b", "c"}, true},
		{"short", []string{"a", "b"}, false},
		{"long", []string{"a", "b", "c", "d"}, false},
		{"out of order", []string{"a", "c", "b"}, false},
	} {
		var res []drover.QueueCheck
		for _, q := range c.res {
			res = append(res, drover.QueueCheck{Queue: q})
		}
		if err := checksInOrder(res, queues); (err == nil) != c.valid {
			t.Errorf("%s: want valid %v, have error %v", c.name, c.valid, err)
		}
	}
}
