package worker

import (
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// Issue 41: a job that finished behind an older message still running (a
// long retry, a slow task) gets its outcome record at the next flush, not
// when the older message ends and the offset can move past it. Before,
// the record waited for the commit that covered it, so job status read
// "pending" for as long as the older message ran (three minutes in the
// report). The offset stays behind the running message and nothing is
// trimmed past it.
func TestAJobFinishedBehindARunningOneIsRecordedAtOnce(t *testing.T) {
	mem := newMemLog()
	mem.add("q", msg("hold1"))
	mem.add("q", msg("m2"))
	entries, _ := mem.ReadAfter(t.Context(), "q", 0, 2)
	ex := newHoldingExecutor()
	w := newTestWorker(t, mem, ex, nil)
	claim := &memClaim{}
	qc := queueConfig("q", func(q *drover.QueueConfig) {
		q.Concurrency = 2
		q.Timeout = drover.Duration(time.Minute)
	})
	if err := w.Start(qc, claim); err != nil {
		t.Fatal(err)
	}
	recorded := func(id string) bool {
		mem.mu.Lock()
		defer mem.mu.Unlock()
		for _, o := range mem.outcomes["q"] {
			if o.ID == id {
				return true
			}
		}
		return false
	}
	waitFor(t, "m2's outcome recorded while hold1 runs", func() bool { return recorded("m2") })
	if ex.held.Load() != 1 {
		t.Fatalf("hold1 should still be running")
	}
	if c := claim.committed(); c >= entries[0].Position {
		t.Fatalf("the offset moved to %d, past the running hold1 (%d)", c, entries[0].Position)
	}
	for _, b := range mem.batches() {
		for _, r := range b {
			if !r.RecordsOnly && r.Offset >= entries[0].Position {
				t.Fatalf("a trim to %d while hold1 (%d) runs", r.Offset, entries[0].Position)
			}
		}
	}
	close(ex.release)
	waitFor(t, "the offset past m2", func() bool { return claim.committed() == entries[1].Position })
	n := 0
	mem.mu.Lock()
	for _, o := range mem.outcomes["q"] {
		if o.ID == "m2" {
			n++
		}
	}
	mem.mu.Unlock()
	if n != 1 {
		t.Fatalf("m2's record written %d times, want once", n)
	}
}
