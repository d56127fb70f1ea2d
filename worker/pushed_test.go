package worker

import (
	"slices"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// A wake-up that carries its message (drover.Wakeup.Entry) spares the
// owner a read when the message continues the queue exactly from its last
// read (issue 43: a lone message's read was two commands and a round trip).
// A carried message after a gap is not taken: the owner reads, runs the
// message it had not heard of first, and runs the carried one once.
func TestACarriedMessageRunsWithoutAReadAndAGapReads(t *testing.T) {
	log := newMemLog()
	log.add("q", msg("a"))
	ex := &scriptedExecutor{}
	w := newTestWorker(t, log, ex, func(c *Config) {
		c.Clock = testkit.NewClock(t0) // no backstop pass, no poll: only wake-ups read
	})
	qc := queueConfig("q", func(qc *drover.QueueConfig) { qc.Ordered, qc.Concurrency = true, 0 }) // runs in order
	if err := w.Start(qc, &memClaim{}); err != nil {
		t.Fatal(err)
	}
	l := w.loop("q")
	// Parked: the loop's reads after a (a wake-up left from its start,
	// say) are over before the count below is taken.
	waitFor(t, "a to run, read with its starts, the queue caught up and parked", func() bool {
		return slices.Contains(ex.runList(), "a#0") && l.flags.Load()&loopStartsRead != 0 && l.parked()
	})
	entry := func(i int) (drover.LogEntry, drover.Position) {
		log.mu.Lock()
		defer log.mu.Unlock()
		return log.log["q"][i], log.log["q"][i-1].Position
	}
	reads := func() int {
		log.mu.Lock()
		defer log.mu.Unlock()
		return log.reads
	}
	before := reads()

	log.add("q", msg("b"))
	b, prev := entry(1)
	w.WakeWith(drover.Wakeup{Queue: "q", Prev: prev, Entry: &b})
	waitFor(t, "b to run", func() bool { return slices.Contains(ex.runList(), "b#0") })
	if n := reads() - before; n != 0 {
		t.Fatalf("b came with its wake-up, right after the last read: want no read, have %d", n)
	}

	// c's wake-up was lost: d's does not continue from b, so the owner reads.
	log.add("q", msg("c"))
	log.add("q", msg("d"))
	d, prev := entry(3)
	w.WakeWith(drover.Wakeup{Queue: "q", Prev: prev, Entry: &d})
	waitFor(t, "c and d to run", func() bool { return slices.Contains(ex.runList(), "d#0") })
	if n := reads() - before; n == 0 {
		t.Fatal("d's wake-up followed a gap: want a read, have none")
	}
	if want, have := []string{"a#0", "b#0", "c#0", "d#0"}, ex.runList(); !slices.Equal(have, want) {
		t.Fatalf("runs: want %v (each once, in order), have %v", want, have)
	}
	w.pushes.mu.Lock()
	kept := len(w.pushes.m)
	w.pushes.mu.Unlock()
	if n := w.State().Stages.Carried.Count; n != 1 {
		t.Fatalf("carried messages taken instead of read (the carried stage in /debug/state): want 1 (b), have %d", n)
	}
	if kept != 0 {
		t.Fatalf("carried messages kept after they were read: %d loops hold some", kept)
	}
}

// A queue whose claim's check found its log empty after the offset takes
// its first message from the wake-up that carried it, without a read: no
// message a previous owner could have started is left unread (issue 43: a
// fleet turning busy after an idle spell read every key once, with its
// starts, before its first task).
func TestAKeyClaimedQuietTakesItsFirstMessageFromItsWakeup(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	w := newTestWorker(t, log, ex, func(c *Config) {
		c.Clock = testkit.NewClock(t0) // no backstop pass, no poll: only the claim's check and wake-ups
	})
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	l := w.loop("q")
	waitFor(t, "the claim's check", func() bool { return l.checked.Load() && l.parked() })

	log.add("q", msg("a"))
	log.mu.Lock()
	a := log.log["q"][0]
	reads := log.reads
	log.mu.Unlock()
	w.WakeWith(drover.Wakeup{Queue: "q", Prev: 0, Entry: &a})
	waitFor(t, "a to run", func() bool { return slices.Contains(ex.runList(), "a#0") })
	log.mu.Lock()
	defer log.mu.Unlock()
	if n := log.reads - reads; n != 0 {
		t.Fatalf("a came with its wake-up on a queue claimed empty: want no read, have %d", n)
	}
}
