package worker

import "time"

// Memory after a burst: the Go runtime keeps the heap it grew to while the
// worker was busy (its collection target is twice the live heap at the
// last collection, and an idle process may not collect for two minutes),
// and returns the rest to the operating system slowly. A worker that ran
// a storm of new queues held 175 MB of RSS a minute later for 56 MB of
// live heap (docs/decisions.md, "An idle worker returns its memory after a
// burst"). So once no queue has run for quietBeforeRelease after work,
// the idle scheduler's next periodic pass collects and returns the free
// memory at once (runtime/debug.FreeOSMemory): once per quiet spell, a
// collection of the live heap (tens of milliseconds of CPU), never while
// a queue runs.

// quietBeforeRelease is how long no queue loop must have run before the
// memory of a burst is returned.
const quietBeforeRelease = 10 * time.Second

// releaseIfQuiet returns free memory to the operating system when a queue
// ran since the last release and none has run for quietBeforeRelease.
func (w *Worker) releaseIfQuiet(now time.Time) {
	if w.loopGoroutines.Load() != 0 || !w.worked.Load() {
		return
	}
	if now.Sub(time.Unix(0, w.drainedAt.Load())) < quietBeforeRelease {
		return
	}
	if w.worked.CompareAndSwap(true, false) {
		w.release()
	}
}
