package fleet

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// queueNames returns n queue names.
func queueNames(n int) []string {
	qs := make([]string, n)
	for i := range qs {
		qs[i] = fmt.Sprintf("q%05d", i)
	}
	return qs
}

// Defect (issue 42): a lost session aborted the owned queues one at a
// time, each Abort waiting for its queue's tasks to die, so the last of 100
// queues whose aborts take 20 ms each began 2 s after the loss, its tasks
// running on meanwhile under a session another member may now hold
// (DESIGN.md §11: "abort everything at once"). Now every owned queue is
// told at once: all 100 aborts have begun while none is allowed to finish
// (each fake abort waits on a gate the test opens only then).
func TestALostSessionAbortsEveryOwnedQueueAtOnce(t *testing.T) {
	rr := startReconciler(t)
	qs := queueNames(100)
	rr.s.assign(1, mine(qs...))
	rr.owning(t, qs...)
	gate := make(chan struct{})
	rr.r.mu.Lock()
	rr.r.abortGate = gate // every abort "takes" until the gate opens
	rr.r.mu.Unlock()
	opened := false
	defer func() {
		if !opened {
			close(gate) // let the reconciler end for the cleanup
		}
	}()

	rr.s.lose()
	testkit.Eventually(t, "all 100 aborts begun before any finished", func() bool {
		rr.r.mu.Lock()
		defer rr.r.mu.Unlock()
		return rr.r.abortsBegun == len(qs)
	})
	close(gate)
	opened = true
	if err := <-rr.done; !errors.Is(err, drover.ErrSessionLost) {
		t.Fatalf("want an error wrapping ErrSessionLost, have %v", err)
	}
	rr.done <- nil // for the cleanup
	for _, q := range qs {
		if n := rr.r.count(rr.r.aborts, q); n != 1 {
			t.Fatalf("%s: want aborted once, have %d", q, n)
		}
	}
}

// Defect (issue 42): every queue handed back got its own goroutine, which
// lived as long as the queue's drain: a rebalance that took 10,000 busy
// queues away held 10,000 goroutines. Now a generation's hand-backs are one
// batch on one goroutine; the bound asserted is 8 goroutines above the
// count before the move, while all 10,000 planned stops wait for their
// (fake) running tasks.
func TestHandingBackManyQueuesTakesABoundedNumberOfGoroutines(t *testing.T) {
	const n, bound = 10_000, 8
	rr := startReconciler(t)
	qs := queueNames(n)
	rr.s.assign(1, mine(qs...))
	rr.owning(t, qs...)
	drain := make(chan struct{}) // the running tasks never end during the test
	rr.r.mu.Lock()
	rr.r.drain = drain
	rr.r.mu.Unlock()
	t.Cleanup(func() { close(drain) }) // before the reconciler's cleanup waits for the drains
	before := runtime.NumGoroutine()

	rr.s.assign(2, map[string]string{}) // every queue moves away
	testkit.Eventually(t, "every queue's stop begun", func() bool { return rr.r.totalStops() == n })
	if have := runtime.NumGoroutine() - before; have > bound {
		t.Fatalf("handing back %d queues: want at most %d goroutines more, have %d more", n, bound, have)
	}
}
