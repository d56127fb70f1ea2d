package worker

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// What a parked queue that never ran a task holds is its record alone: no
// place at the pool and no Done channel (made by the first dispatch and by
// Stop or Abort); a queue that ran a task has its pool place.
func TestAQueueThatNeverRanHoldsNoPoolPlaceOrDoneChannel(t *testing.T) {
	log := newMemLog()
	log.add("busy", msg("m"))
	ex := &scriptedExecutor{}
	w := newTestWorker(t, log, ex, nil)
	for _, q := range []string{"idle", "busy"} {
		if err := w.Start(queueConfig(q, nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "busy's message to run", func() bool { return slices.Contains(ex.runList(), "m#0") })
	allParked(t, w)
	idle, busy := w.loop("idle"), w.loop("busy")
	if idle.waiter.Load() != nil {
		t.Fatal("a queue that never dispatched: want no pool place")
	}
	if busy.waiter.Load() == nil {
		t.Fatal("a queue that ran a task: want its pool place")
	}
	idle.mu.Lock()
	done := idle.done
	idle.mu.Unlock()
	if done != nil {
		t.Fatal("a running queue nobody stopped: want no Done channel yet")
	}
	if err := w.Stop(t.Context(), "idle", drover.StopLeave); err != nil {
		t.Fatalf("stop idle: %v", err)
	}
	if !loopEnded(w, "idle") {
		t.Fatal("idle stopped: want its loop ended")
	}
}

// The record every owned queue keeps, parked or not, fits the allocator's
// 448-byte size class (25,000 queues: 1.6 MB less than the 512-byte class
// it took with three time.Time timers). A field added past it costs 64
// bytes a queue: make room, or move run-only state out of the record.
func TestAQueueLoopRecordFitsTheAllocatorsFourHundredFortyEightByteClass(t *testing.T) {
	if n := unsafe.Sizeof(queueLoop{}); n > 448 {
		t.Fatalf("queueLoop takes %d bytes: more than the 448-byte size class", n)
	}
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// Defect (issue 40): a worker keeps what its queues need, not what the
// most queues it ever owned needed. Its map of owned queues kept the table
// of its largest size after the queues were given up, so a worker that
// owned 50,000 keys during a churn and 10,000 after it kept the table of
// 50,000. A worker that gave most of its queues up holds about what the
// queues it kept hold.
func TestAWorkerThatGaveMostQueuesUpKeepsWhatTheRestNeed(t *testing.T) {
	const n, kept = 20_000, 2_000
	log := newMemLog()
	w, err := New(Config{Member: "m", Store: log, Executor: &scriptedExecutor{}, Clock: testkit.NewClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c-key-%07d", i)
	}
	base := liveHeap()
	for _, q := range names {
		if err := w.Start(queueConfig(q, nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	allChecked(t, w)
	forgetRoutes := func() { // the fake's record of the routes, not the worker's
		log.mu.Lock()
		log.routed = nil
		log.mu.Unlock()
	}
	forgetRoutes()
	full := liveHeap() - base
	w.StopQueues(t.Context(), names[kept:], drover.StopLeave, nil)
	if len(w.Owned()) != kept {
		t.Fatalf("want %d queues owned, have %d", kept, len(w.Owned()))
	}
	forgetRoutes()
	left := liveHeap() - base
	runtime.KeepAlive(names)
	// What the kept queues hold is their share of what all of them held;
	// beyond it, the table of 20,000 entries was about 58 bytes per queue
	// given up, and a GC's noise a few.
	share := full * kept / n
	perGone := float64(left-share) / (n - kept)
	t.Logf("%d queues: %d bytes; %d kept of them: %d bytes (their share %d, %.1f bytes more per queue given up)", n, full, kept, left, share, perGone)
	if perGone > 40 {
		t.Fatalf("%d of %d queues kept: want at most 40 bytes beyond their share (%d of the %d bytes the %d took) per queue given up, have %.1f",
			kept, n, share, full, n, perGone)
	}
	w.AbortAll()
}
