package worker

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/drover-dev/drover"
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
