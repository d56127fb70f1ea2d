package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/worker/executor"
)

// countingLog is a memLog that measures backlogs (counted, per queue) and
// whose reads can be held: a read round trip started while hold is set
// waits until it is cleared.
type countingLog struct {
	*memLog
	readGate
	backlogs atomic.Int32
	held     atomic.Int32 // read round trips that waited for hold
}

func (l *countingLog) BacklogMany(ctx context.Context, queues []string, offsets []drover.Position) ([]drover.Backlog, []error) {
	l.backlogs.Add(int32(len(queues)))
	return l.memLog.BacklogMany(ctx, queues, offsets)
}

func (l *countingLog) ReadMany(ctx context.Context, reqs []drover.ReadRequest) []drover.ReadResult {
	if h := l.gate(); h != nil {
		l.held.Add(1)
		<-h
	}
	return l.memLog.ReadMany(ctx, reqs)
}

// gateExecutor runs a message once a token for its id arrives, and records
// which messages started.
type gateExecutor struct {
	mu      sync.Mutex
	started map[string]bool
	gates   map[string]chan struct{}
}

func newGateExecutor() *gateExecutor {
	return &gateExecutor{started: map[string]bool{}, gates: map[string]chan struct{}{}}
}

func (e *gateExecutor) gate(id string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.gates[id]
	if g == nil {
		g = make(chan struct{})
		e.gates[id] = g
	}
	return g
}

func (e *gateExecutor) Execute(ctx context.Context, t *executor.Task) executor.Result {
	e.mu.Lock()
	e.started[t.Message.ID] = true
	e.mu.Unlock()
	select {
	case <-e.gate(t.Message.ID):
	case <-ctx.Done():
		return executor.Result{Outcome: executor.OutcomeAborted, ExitCode: -1, Reason: "aborted"}
	}
	return executor.Result{Outcome: executor.OutcomeSuccess}
}

func (e *gateExecutor) hasStarted(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started[id]
}

// A queue that waits for a slot of the worker's pool (thousands of busy
// queues share it) costs no Redis round trip per wake-up: woken by
// enqueues while it waits, it neither reads again (it holds work already)
// nor reads its backlog more than once per BacklogInterval. Granted a
// slot, it starts the message it holds before any read: a slot never sits
// granted and unused for a round trip.
func TestQueueWaitingForASlotStartsAtOnceAndReadsNothingMore(t *testing.T) {
	mem := newMemLog()
	log := &countingLog{memLog: mem}
	ex := newGateExecutor()
	w := newTestWorker(t, mem, ex, func(c *Config) {
		c.Clock = testkit.NewClock(t0) // no timed reads or backlogs
		c.Store, c.Capacity = log, 1
		c.CommitInterval, c.PromoteInterval, c.PollInterval = DefaultCommitInterval, DefaultPromoteInterval, DefaultPollInterval
	})
	for _, q := range []string{"hold", "wait"} {
		if err := w.Start(queueConfig(q, nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	mem.add("hold", msg("h1"))
	w.Wake("hold")
	waitFor(t, "hold's task to start and take the only slot", func() bool { return ex.hasStarted("h1") })

	mem.add("wait", msg("w1"))
	w.Wake("wait")
	waiting := w.loop("wait")
	waitFor(t, "wait to park waiting for the slot", func() bool {
		return waiting.parked() && w.pool.isWaiting(waiting.waiter.Load())
	})
	_, _, reads := mem.counts()
	backlogs := log.backlogs.Load()
	for i := range 5 {
		mem.add("wait", msg(fmt.Sprintf("w%d", i+2)))
		it := w.iterationCount.Load()
		w.Wake("wait")
		waitFor(t, "wait to run an iteration and park again", func() bool {
			return w.iterationCount.Load() > it && waiting.parked()
		})
	}
	if _, _, r := mem.counts(); r != reads {
		t.Fatalf("five wake-ups while waiting for a slot with work in hand: want no read, have %d", r-reads)
	}
	if b := log.backlogs.Load(); b != backlogs {
		t.Fatalf("five wake-ups while waiting for a slot within BacklogInterval: want no backlog read, have %d", b-backlogs)
	}

	// The slot is freed while reads hang: the waiting queue starts the
	// message it holds without a read first.
	releaseReads := log.holdReads()
	defer releaseReads()
	close(ex.gate("h1"))
	waitFor(t, "wait's first message to start on the freed slot before any read", func() bool { return ex.hasStarted("w1") })
	releaseReads()
	for i := range 6 {
		close(ex.gate(fmt.Sprintf("w%d", i+1)))
	}
	for i := range 6 {
		id := fmt.Sprintf("w%d", i+1)
		waitFor(t, id+" to start", func() bool { return ex.hasStarted(id) })
	}
}

// Missed wake-ups reported again and again (a reader behind under load)
// share one full check per PollInterval instead of one each: the full
// check of every parked queue is the heaviest thing a worker asks of
// Redis, and running it per report kept the reader behind.
func TestMissedWakeupsShareOneFullCheckPerPollInterval(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	w, clock := newIdleWorker(t, log, ex)
	for i := range 20 {
		if err := w.Start(queueConfig(fmt.Sprintf("q%02d", i), nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	allChecked(t, w) // and checked again once routed here
	full := log.fullChecks()
	w.MissedWakeups()
	waitFor(t, "a full check after missed wake-ups", func() bool { return log.fullChecks() == full+1 })
	log.add("q05", msg("lost")) // its wake-up is among those missed
	for range 3 {
		w.MissedWakeups()
	}
	before := w.idle.passCount()
	w.idle.poke()
	waitFor(t, "the scheduler to take the reports", func() bool { return w.idle.passCount() > before })
	if f := log.fullChecks(); f != full+1 {
		t.Fatalf("missed wake-ups within PollInterval of a full check: want no other full check yet, have %d", f-full-1)
	}
	clock.Advance(DefaultPollInterval)
	waitFor(t, "one full check for the reports, a PollInterval after the last", func() bool { return log.fullChecks() == full+2 })
	waitFor(t, "the lost message run", func() bool { return slices.Contains(ex.runList(), "lost#0") })
	for range 2 {
		passes := w.idle.checkCount()
		clock.Advance(DefaultPollInterval)
		waitFor(t, "the next periodic pass", func() bool { return w.idle.checkCount() > passes })
	}
	if f := log.fullChecks(); f != full+2 {
		t.Fatalf("no report since: want no other full check, have %d", f-full-2)
	}
}

// The queues of one commit flush have their records written in one call
// (one round trip), and are trimmed in one call, each at its committed
// offset, not one call per queue.
func TestOneFlushTrimsItsQueuesInOneCall(t *testing.T) {
	mem := newMemLog()
	log := mem
	ex := &scriptedExecutor{}
	clock := testkit.NewClock(t0)
	w := newTestWorker(t, mem, ex, atDefaults(clock, log))
	claims := map[string]*memClaim{}
	for i := range 5 {
		q := fmt.Sprintf("q%d", i)
		claims[q] = &memClaim{}
		if err := w.Start(queueConfig(q, nil), claims[q]); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	for q := range claims {
		mem.add(q, msg("m-"+q))
		w.Wake(q)
	}
	waitFor(t, "the five messages run", func() bool { return len(ex.runList()) == 5 })
	allParked(t, w)
	clock.Advance(DefaultCommitInterval)
	waitFor(t, "the five queues committed", func() bool {
		for _, c := range claims {
			if c.committed() == 0 {
				return false
			}
		}
		return len(log.batches()) > 0
	})
	// The flush writes the five queues' records in one call; the next one,
	// with nothing to commit on an idle member, trims the five in one call.
	b := log.batches()
	if len(b) != 1 || len(b[0]) != 5 {
		t.Fatalf("one flush of five queues: want one call of 5, have %d calls (%v)", len(b), b)
	}
	clock.Advance(DefaultCommitInterval)
	waitFor(t, "the five queues trimmed", func() bool {
		mem.mu.Lock()
		defer mem.mu.Unlock()
		return len(mem.trims) == 5
	})
	b = log.batches()
	if len(b) != 2 || len(b[1]) != 5 {
		t.Fatalf("want the five trims in one call after the records' call, have %d calls (%v)", len(b), b)
	}
	for _, r := range b[1] {
		if r.RecordsOnly || r.Offset != claims[r.Queue].committed() {
			t.Fatalf("%s: trimmed at %d (records only: %v), committed %d", r.Queue, r.Offset, r.RecordsOnly, claims[r.Queue].committed())
		}
	}
}

// A task's pool slot goes to the next queue when the task ends, not when
// its queue's run goroutine next looks (it may be inside a read).
func TestSlotGoesToTheNextQueueWhileTheLoopReads(t *testing.T) {
	mem := newMemLog()
	log := &countingLog{memLog: mem}
	ex := newGateExecutor()
	w := newTestWorker(t, mem, ex, func(c *Config) {
		c.Clock = testkit.NewClock(t0)
		c.Store, c.Capacity = log, 1
		c.CommitInterval, c.PromoteInterval, c.PollInterval = DefaultCommitInterval, DefaultPromoteInterval, DefaultPollInterval
	})
	for _, q := range []string{"a", "b"} {
		if err := w.Start(queueConfig(q, nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	mem.add("a", msg("a1"))
	w.Wake("a")
	waitFor(t, "a1 to start on the only slot", func() bool { return ex.hasStarted("a1") })
	mem.add("b", msg("b1"))
	w.Wake("b")
	b := w.loop("b")
	waitFor(t, "b to wait for the slot", func() bool { return b.parked() && w.pool.isWaiting(b.waiter.Load()) })

	release := log.holdReads()
	defer release()
	mem.add("a", msg("a2"))
	w.Wake("a") // a's run goroutine reads, and the read hangs
	waitFor(t, "a's loop inside a read", func() bool { return log.held.Load() == 1 })
	close(ex.gate("a1"))
	waitFor(t, "b1 to start on the slot a1 freed, while a's loop still reads", func() bool { return ex.hasStarted("b1") })
	release()
	close(ex.gate("b1"))
	close(ex.gate("a2"))
	waitFor(t, "a2 to run", func() bool { return ex.hasStarted("a2") })
}

// A turn with nothing in flight does not promote on its own, however long
// it lasts (here: its read waits for Redis over three PromoteIntervals):
// its due times are the idle scheduler's, as a parked queue's are. In an
// overloaded fleet (50,000 keys × 0.2/s on two cores) nearly every turn
// waited over a PromoteInterval for its read, and the promotion round trip
// each such turn then sent took 41% of the workers' CPU, which kept them
// overloaded.
func TestATurnWithNothingInFlightDoesNotPromote(t *testing.T) {
	mem := newMemLog()
	log := &countingLog{memLog: mem}
	ex := &scriptedExecutor{}
	clock := testkit.NewClock(t0)
	w := newTestWorker(t, mem, ex, atDefaults(clock, log))
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	allParked(t, w)
	waitFor(t, "the started queue checked", func() bool { return w.loop("q").dueKnown.Load() })
	promotes := mem.promoteCount()

	release := log.holdReads()
	defer release()
	mem.add("q", msg("m1"))
	w.Wake("q")
	waitFor(t, "q's read to wait for Redis", func() bool { return log.held.Load() == 1 })
	clock.Advance(3 * DefaultPromoteInterval)
	release()
	waitFor(t, "m1 to run", func() bool { return len(ex.runList()) == 1 })
	allParked(t, w)
	if p := mem.promoteCount(); p != promotes {
		t.Fatalf("a turn with nothing in flight: want no promotion, have %d", p-promotes)
	}
}

// A queue whose start check learnt its due times does not promote on its
// first run: nothing is due that the idle scheduler does not know of.
func TestCheckedQueueDoesNotPromoteOnItsFirstRun(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	w, _ := newIdleWorker(t, log, ex)
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	allParked(t, w)
	waitFor(t, "the started queue checked", func() bool { return w.loop("q").dueKnown.Load() })
	promotes := log.promoteCount()
	log.add("q", msg("m1"))
	w.Wake("q")
	waitFor(t, "m1 to run", func() bool { return len(ex.runList()) == 1 })
	allParked(t, w)
	if p := log.promoteCount(); p != promotes {
		t.Fatalf("first run of a checked queue: want no promotion, have %d", p-promotes)
	}
}
