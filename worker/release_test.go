package worker

import (
	"sync/atomic"
	"testing"
)

// A worker returns its free memory once no queue has run for
// quietBeforeRelease after work: not sooner, not while a queue runs, and
// once per quiet spell.
func TestAQuietWorkerReturnsItsMemoryOnceAfterWork(t *testing.T) {
	log := newMemLog()
	log.add("q", msg("one"))
	ex := &scriptedExecutor{}
	w, clock := newIdleWorker(t, log, ex)
	var released atomic.Int32
	w.release = func() { released.Add(1) }
	w.releaseIfQuiet(clock.Now().Add(quietBeforeRelease))
	if n := released.Load(); n != 0 {
		t.Fatalf("before any work: want no release, have %d", n)
	}
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task ran", func() bool { return len(ex.runList()) == 1 })
	allParked(t, w)
	drained := clock.Now()
	w.releaseIfQuiet(drained.Add(quietBeforeRelease / 2))
	if n := released.Load(); n != 0 {
		t.Fatalf("half the quiet time after the work: want no release, have %d", n)
	}
	w.releaseIfQuiet(drained.Add(quietBeforeRelease))
	w.releaseIfQuiet(drained.Add(2 * quietBeforeRelease))
	if n := released.Load(); n != 1 {
		t.Fatalf("quiet after work, asked twice: want one release, have %d", n)
	}

	// Work again: one more release once it is quiet again, none while a
	// queue runs.
	gate := make(chan struct{})
	ex.mu.Lock()
	ex.gate = gate
	ex.mu.Unlock()
	log.add("q", msg("two"))
	w.loop("q").signal()
	waitFor(t, "the second task running", func() bool { return len(ex.runList()) == 2 })
	w.releaseIfQuiet(clock.Now().Add(10 * quietBeforeRelease))
	if n := released.Load(); n != 1 {
		t.Fatalf("a queue running: want no release, have %d in all", n)
	}
	close(gate)
	allParked(t, w)
	w.releaseIfQuiet(clock.Now().Add(quietBeforeRelease))
	if n := released.Load(); n != 2 {
		t.Fatalf("quiet after the second work: want a second release, have %d in all", n)
	}
}
