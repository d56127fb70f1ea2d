package worker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/worker/executor"
)

// gatedStarts is a memLog whose start records can be held: while held,
// RecordStarts waits (the round trip is slow) and writes nothing until
// released. Its hook sees each call first; its TrimMany notes any trim
// sent while a record of the trimmed queue is held (a trim that overtook
// a record: the field it deletes would come back after it).
type gatedStarts struct {
	*memLog

	mu        sync.Mutex
	held      chan struct{}
	heldIDs   map[string]bool // queue\x00id of the records held now
	onRecord  func(queues, ids []string)
	overtaken []string // "queue": trims sent while one of its records was held
	sent      int      // RecordStarts calls
}

func (g *gatedStarts) calls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sent
}

func (g *gatedStarts) hold() (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := make(chan struct{})
	g.held = h
	return func() {
		g.mu.Lock()
		g.held = nil
		g.mu.Unlock()
		close(h)
	}
}

func (g *gatedStarts) RecordStarts(ctx context.Context, queues, ids []string) ([]int, error) {
	g.mu.Lock()
	g.sent++
	h, hook := g.held, g.onRecord
	if h != nil {
		if g.heldIDs == nil {
			g.heldIDs = map[string]bool{}
		}
		for i := range ids {
			g.heldIDs[queues[i]+"\x00"+ids[i]] = true
		}
	}
	g.mu.Unlock()
	if hook != nil {
		hook(queues, ids)
	}
	if h != nil {
		select {
		case <-h:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		g.mu.Lock()
		for i := range ids {
			delete(g.heldIDs, queues[i]+"\x00"+ids[i])
		}
		g.mu.Unlock()
	}
	return g.memLog.RecordStarts(ctx, queues, ids)
}

func (g *gatedStarts) TrimMany(ctx context.Context, reqs []drover.TrimRequest) []error {
	g.mu.Lock()
	for _, r := range reqs {
		for k := range g.heldIDs {
			if !r.RecordsOnly && k[:len(r.Queue)+1] == r.Queue+"\x00" {
				g.overtaken = append(g.overtaken, r.Queue)
			}
		}
	}
	g.mu.Unlock()
	return g.memLog.TrimMany(ctx, reqs)
}

// recorded returns the starts recorded of id in q.
func (g *gatedStarts) recorded(q, id string) int {
	g.memLog.mu.Lock()
	defer g.memLog.mu.Unlock()
	return g.memLog.starts[q+"\x00"+id]
}

// count returns how many runs of id runs holds.
func count(runs []string, id string) int {
	n := 0
	for _, r := range runs {
		if len(r) > len(id) && r[:len(id)+1] == id+"#" {
			n++
		}
	}
	return n
}

// A message's first start on a queue its owner has committed since its
// claim does not wait for its record (docs/decisions.md, "Issue 40: a
// first start is recorded without waiting"): the read told the owner that
// nothing is recorded, and the queue is its own. Before, every start waited
// a round trip: the inline runtime ran 2.5 times slower. The trim that
// deletes the message's field still waits for the record. A retry then
// waits for its record, after the first one, so its count is exact.
func TestFirstStartAfterACommitDoesNotWaitForItsRecord(t *testing.T) {
	g := &gatedStarts{memLog: newMemLog()}
	g.add("q", msg("a"))
	ex := &scriptedExecutor{outcome: func(m *drover.Message) executor.Outcome {
		if m.ID == "c" && m.Attempt == 0 {
			return executor.OutcomeFailure
		}
		return executor.OutcomeSuccess
	}}
	w := newTestWorker(t, g.memLog, ex, func(c *Config) { c.Store = g })
	w.starts.hold = time.Hour // only what needs a record ends a hold here
	claim := &memClaim{}
	qc := queueConfig("q", func(qc *drover.QueueConfig) { qc.Ordered, qc.Concurrency = true, 0 })
	if err := w.Start(qc, claim); err != nil {
		t.Fatal(err)
	}
	l := w.loop("q")
	waitFor(t, "a to run and be committed", func() bool {
		return slices.Contains(ex.runList(), "a#0") && l.flags.Load()&loopCommitted != 0
	})

	// b's record is held: b runs all the same, as attempt 0, and is
	// committed. It succeeded before its record left, so the record is
	// dropped (issue 43: a finished message needs no count); the trim
	// past b does not wait for it.
	release := g.hold()
	g.add("q", msg("b"))
	w.Wake("q")
	waitFor(t, "b to run while its start's record is held", func() bool { return slices.Contains(ex.runList(), "b#0") })
	g.memLog.mu.Lock()
	bPos := g.memLog.log["q"][1].Position
	g.memLog.mu.Unlock()
	waitFor(t, "b to be committed and trimmed", func() bool {
		return claim.committed() >= bPos && slices.ContainsFunc(g.trimList("q"), func(p drover.Position) bool { return p >= bPos })
	})
	release()
	if err := w.starts.settled(context.Background(), w.starts.mark()); err != nil {
		t.Fatal(err)
	}
	if n := g.recorded("q", "b"); n != 0 {
		t.Fatalf("b's start recorded %d times: a first start whose task succeeded while it was held must not be sent", n)
	}

	// c fails at its first attempt, whose record is held: its retry in
	// place waits for that record, then records its own start and waits
	// for it (the count it runs with is the reply's).
	var mu sync.Mutex
	var early []string
	g.mu.Lock()
	g.onRecord = func(_, ids []string) {
		if slices.Contains(ids, "c") && g.recorded("q", "c") >= 1 {
			if n := count(ex.runList(), "c"); n != 1 {
				mu.Lock()
				early = append(early, "c's retry record sent after "+string(rune('0'+n))+" runs")
				mu.Unlock()
			}
		}
	}
	g.mu.Unlock()
	release = g.hold()
	g.add("q", msg("c"))
	w.Wake("q")
	waitFor(t, "c's first attempt", func() bool { return slices.Contains(ex.runList(), "c#0") })
	release()
	waitFor(t, "c's retry", func() bool { return slices.Contains(ex.runList(), "c#1") })
	mu.Lock()
	defer mu.Unlock()
	if len(early) > 0 {
		t.Fatalf("a retry's start must wait for its record: %v", early)
	}
	if want, have := []string{"a#0", "b#0", "c#0", "c#1"}, ex.runList(); !slices.Equal(have, want) {
		t.Fatalf("runs: want %v, have %v", want, have)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.overtaken) > 0 {
		t.Fatalf("trims sent while a record of their queue was held: %v", g.overtaken)
	}
}

// Before an owner has committed a queue since its claim, every start waits
// for its record, first starts included: a message that kills its worker
// as soon as it starts (an inline handler that exits the process) would
// otherwise crash every owner before its record left, and run forever,
// never counted. A commit proves the owner got past something, so the
// messages it runs after that are counted at most one start short by a
// crash (docs/decisions.md, "Issue 40: a first start is recorded without
// waiting").
func TestStartsBeforeTheOwnersFirstCommitWaitForTheirRecords(t *testing.T) {
	g := &gatedStarts{memLog: newMemLog()}
	g.add("q", msg("d"))
	ex := &scriptedExecutor{}
	var mu sync.Mutex
	ranBeforeRecord := -1
	g.onRecord = func(_, ids []string) {
		if slices.Contains(ids, "d") {
			mu.Lock()
			ranBeforeRecord = count(ex.runList(), "d")
			mu.Unlock()
		}
	}
	release := g.hold()
	w := newTestWorker(t, g.memLog, ex, func(c *Config) { c.Store = g })
	claim := &memClaim{}
	if err := w.Start(queueConfig("q", nil), claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "d's start record to be sent", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ranBeforeRecord >= 0
	})
	if n := count(ex.runList(), "d"); n != 0 {
		t.Fatalf("d ran %d times while its record was held: a start before the owner's first commit must wait", n)
	}
	release()
	waitFor(t, "d to run", func() bool { return slices.Contains(ex.runList(), "d#0") })
	if n := g.recorded("q", "d"); n != 1 {
		t.Fatalf("d's starts: want 1, have %d", n)
	}
	if n := w.State().Stages.StartRecord.Count; n != 1 {
		t.Fatalf("starts that waited for their record (the start_record stage): want 1 (d's), have %d", n)
	}
}

// settled waits for the records handed in before its mark, and only those.
func TestStarterSettledWaitsForRecordsBeforeItsMark(t *testing.T) {
	g := &gatedStarts{memLog: newMemLog()}
	s := newStarter(g, drover.SystemClock{})
	before := s.mark()
	release := g.hold()
	r := s.send("q", "a")
	if err := s.settled(context.Background(), before); err != nil {
		t.Fatalf("settled for a mark before any record: %v", err)
	}
	mark := s.mark()
	got := make(chan int, 1)
	go func() {
		if err := s.settled(context.Background(), mark); err != nil {
			t.Error(err)
		}
		got <- g.recorded("q", "a")
	}()
	release()
	if n := <-got; n != 1 {
		t.Fatalf("settled returned with a's start recorded %d times: want it to wait for the record", n)
	}
	if n, err := s.wait(context.Background(), r); err != nil || n != 1 {
		t.Fatalf("the record sent: want 1, have %d, %v", n, err)
	}
}

// A first start sent without waiting is held: it leaves when its hold ends
// (or when something needs it: settleStart, settled, a record waited for),
// and a record dropped while held is never sent. A batch whose records were
// all dropped costs no round trip.
func TestAHeldStartLeavesWhenItsHoldEndsUnlessDropped(t *testing.T) {
	g := &gatedStarts{memLog: newMemLog()}
	clock := testkit.NewClock(time.Unix(1_700_000_000, 0))
	s := newStarter(g, clock)
	a := s.send("q", "a")
	b := s.send("q", "b")
	s.drop(b)
	waitFor(t, "the sender to wait for the hold's end", func() bool { return clock.Timers() > 0 })
	if n := g.recorded("q", "a"); n != 0 {
		t.Fatalf("a's start recorded %d times before its hold ended", n)
	}
	clock.Advance(startHold)
	waitFor(t, "a's record after its hold", func() bool { return g.recorded("q", "a") == 1 })
	if n, err := s.wait(context.Background(), a); err != nil || n != 1 {
		t.Fatalf("a's record: want 1, have %d, %v", n, err)
	}
	if n := g.recorded("q", "b"); n != 0 {
		t.Fatalf("b's start was dropped while held, and recorded %d times", n)
	}

	// A waited-for record ends the hold of the records before it.
	c := s.send("q", "c")
	if n, err := s.record(context.Background(), "q", "d"); err != nil || n != 1 {
		t.Fatalf("d's record: want 1, have %d, %v", n, err)
	}
	if n := g.recorded("q", "c"); n != 1 {
		t.Fatalf("c's start, held before a record that is waited for: recorded %d times, want 1", n)
	}
	if _, err := s.wait(context.Background(), c); err != nil {
		t.Fatal(err)
	}

	// Every record of a batch dropped: the batch leaves without a round trip.
	rounds, _ := s.stats()
	e := s.send("q", "e")
	s.drop(e)
	if err := s.settled(context.Background(), s.mark()); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.stats(); r != rounds+1 || g.recorded("q", "e") != 0 || g.calls() != 2 {
		t.Fatalf("a batch of dropped records: rounds %d → %d, e recorded %d, RecordStarts calls %d (want 2)",
			rounds, r, g.recorded("q", "e"), g.calls())
	}
}

// startsAsked counts the queue reads that asked for the recorded starts.
type startsAsked struct {
	*gatedStarts
	mu    sync.Mutex
	asked int
}

func (s *startsAsked) ReadMany(ctx context.Context, reqs []drover.ReadRequest) []drover.ReadResult {
	s.mu.Lock()
	for _, r := range reqs {
		if r.Starts {
			s.asked++
		}
	}
	s.mu.Unlock()
	return s.gatedStarts.ReadMany(ctx, reqs)
}

func (s *startsAsked) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked
}

// An owner reads the recorded starts until a read catches up with the
// queue after its claim: only the messages at or below the head it
// claimed can have starts it does not know of (a previous owner's). Later
// reads skip the starts fields of :msg (issue 43). A
// retry promoted from :delayed, read then without its starts, says in its
// envelope that it ran before: its start waits for the exact count, so it
// runs as attempt 1, not as a first start again.
func TestReadsSkipStartsAfterCatchingUpAndRetriesStillCount(t *testing.T) {
	s := &startsAsked{gatedStarts: &gatedStarts{memLog: newMemLog()}}
	s.add("q", msg("a"))
	ex := &scriptedExecutor{outcome: func(m *drover.Message) executor.Outcome {
		if m.ID == "x" && m.Attempt == 0 {
			return executor.OutcomeFailure
		}
		return executor.OutcomeSuccess
	}}
	w := newTestWorker(t, s.memLog, ex, func(c *Config) { c.Store = s })
	claim := &memClaim{}
	if err := w.Start(queueConfig("q", nil), claim); err != nil {
		t.Fatal(err)
	}
	l := w.loop("q")
	waitFor(t, "a to run and be committed, the queue caught up", func() bool {
		return slices.Contains(ex.runList(), "a#0") && l.flags.Load()&(loopCommitted|loopStartsRead) == loopCommitted|loopStartsRead
	})
	asked := s.count()
	if asked == 0 {
		t.Fatal("no read asked for the recorded starts after the claim")
	}
	s.add("q", msg("x"))
	w.Wake("q")
	waitFor(t, "x's retry to run", func() bool { return len(ex.runList()) == 3 })
	if want, have := []string{"a#0", "x#0", "x#1"}, ex.runList(); !slices.Equal(have, want) {
		t.Fatalf("runs: want %v, have %v", want, have)
	}
	if n := s.recorded("q", "x"); n != 2 {
		t.Fatalf("x's starts: want 2, have %d", n)
	}
	if n := s.count(); n != asked {
		t.Fatalf("reads asking for starts after the queue caught up: want none, have %d", n-asked)
	}
}

// A queue's first offset since its claim, offered while it has more to
// start, is committed at once, not at the end of the commit interval:
// until it is, every start of the queue waits for its record's round trip
// (the rule above), and at the interval's end that was the first 200 ms
// of every claim, a quarter of the /bin/true benchmark's starts
// (docs/decisions.md, "Issue 43: where the /bin/true ratio goes"). The
// rule itself is unchanged: a start before that commit still waits. And
// the early flushes keep their bound: a second queue's first offset less
// than an interval later waits for the timed flush.
func TestAQueuesFirstOffsetIsCommittedWithoutWaitingForTheInterval(t *testing.T) {
	g := &gatedStarts{memLog: newMemLog()}
	ex := &scriptedExecutor{gate: make(chan struct{})}
	w, clock := newIdleWorker(t, g.memLog, ex)
	w.cfg.Store = g
	w.starts.store = g
	bc := &batchCommitter{clock: clock}
	a, b := &batchClaim{queue: "a", b: bc}, &batchClaim{queue: "b", b: bc}
	one := func(qc *drover.QueueConfig) { qc.Concurrency = 1 }
	for _, q := range []string{"a", "b"} { // positions 1, 2 in a; 3, 4 in b
		g.add(q, msg(q+"1"))
		g.add(q, msg(q+"2"))
	}
	var mu sync.Mutex
	var unawaited []string // starts that ran before their record was written
	g.onRecord = func(_, ids []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			// a1 and b1 start before their queue's first commit.
			if (id == "a1" || id == "b1") && slices.Contains(ex.runList(), id+"#0") {
				unawaited = append(unawaited, id)
			}
		}
	}
	if err := w.Start(queueConfig("a", one), a); err != nil {
		t.Fatal(err)
	}
	w.Wake("a")
	waitFor(t, "a1 runs", func() bool { return slices.Contains(ex.runList(), "a1#0") })
	ex.gate <- struct{}{} // a1 ends; a2 is next: the clock stands still
	waitFor(t, "a's first offset committed before the interval's end", func() bool { return a.committed() == 1 })
	la := w.loop("a")
	waitFor(t, "a's commit settled", func() bool { return la.flags.Load()&loopCommitted != 0 })
	waitFor(t, "a2 runs", func() bool { return slices.Contains(ex.runList(), "a2#0") })
	ex.gate <- struct{}{}
	waitFor(t, "a2 done", func() bool { return queueDoneOf(w, "a") == 2 })
	mu.Lock()
	if len(unawaited) > 0 {
		t.Fatalf("starts before the queue's first commit ran before their records: %v", unawaited)
	}
	mu.Unlock()

	if err := w.Start(queueConfig("b", one), b); err != nil {
		t.Fatal(err)
	}
	firsts := w.commits.firsts.Load()
	w.Wake("b")
	waitFor(t, "b1 runs", func() bool { return slices.Contains(ex.runList(), "b1#0") })
	ex.gate <- struct{}{}
	waitFor(t, "b's request seen", func() bool { return w.commits.firsts.Load() > firsts })
	if n := len(bc.callList()); n != 1 {
		t.Fatalf("b's first offset less than an interval after an early flush: want no flush, have %d calls", n-1)
	}
	clock.Advance(DefaultCommitInterval)
	waitFor(t, "b's first offset committed by the timed flush", func() bool { return b.committed() == 3 })
	bc.mu.Lock()
	at := slices.Clone(bc.at)
	bc.mu.Unlock()
	if want := []time.Time{t0, t0.Add(DefaultCommitInterval)}; !slices.Equal(at, want) {
		t.Fatalf("flush times: want %v, have %v", want, at)
	}
	ex.gate <- struct{}{} // b2
}

// queueDoneOf is the contiguous completed position of a queue w runs.
func queueDoneOf(w *Worker, queue string) drover.Position {
	for _, q := range w.State().Queues {
		if q.Name == queue {
			return q.Done
		}
	}
	return 0
}

// A trim waits for the start records of the messages it covers, and the
// member's commits do not wait with it: while a's start record is held (a
// Redis that is slow to take it), a's queue's trim stays owed and b, on
// another queue, is committed. Before, the committer waited for the record
// (up to writeTimeout, 10 s) before the trim, and every commit of the
// member waited behind it; at the end of the wait it sent the trim anyway.
func TestCommitsDoNotWaitBehindAHeldStartRecord(t *testing.T) {
	g := &gatedStarts{memLog: newMemLog()}
	aRecorded := make(chan struct{})
	var once sync.Once
	g.onRecord = func(_, ids []string) {
		if slices.Contains(ids, "a") {
			once.Do(func() { close(aRecorded) })
		}
	}
	ex := &scriptedExecutor{outcome: func(m *drover.Message) executor.Outcome {
		if m.ID == "a" {
			<-aRecorded // a outlives its start's hold: the record leaves
		}
		return executor.OutcomeSuccess
	}}
	w := newTestWorker(t, g.memLog, ex, func(c *Config) { c.Store = g })
	w.starts.hold = 0
	claims := map[string]*memClaim{"q": {}, "q2": {}}
	for _, q := range []string{"q", "q2"} {
		// A first message committed, so that later first starts do not
		// wait for their records (TestFirstStartAfterACommitDoesNotWaitForItsRecord).
		g.add(q, msg("warm-"+q))
		if err := w.Start(queueConfig(q, nil), claims[q]); err != nil {
			t.Fatal(err)
		}
		waitFor(t, q+"'s first message committed", func() bool { return claims[q].committed() > 0 })
	}

	release := g.hold()
	defer func() {
		if release != nil {
			release()
		}
	}()
	g.add("q", msg("a"))
	w.Wake("q")
	aPos := g.lastPosition("q")
	waitFor(t, "a committed while its start record is held", func() bool { return claims["q"].committed() >= aPos })
	g.add("q2", msg("b"))
	w.Wake("q2")
	bPos := g.lastPosition("q2")
	waitFor(t, "b committed while a's start record is held", func() bool { return claims["q2"].committed() >= bPos })
	if slices.ContainsFunc(g.trimList("q"), func(p drover.Position) bool { return p >= aPos }) {
		t.Fatalf("q trimmed past a while a's start record was held: trims %v", g.trimList("q"))
	}
	release()
	release = nil
	waitFor(t, "q's owed trim sent once a's record was answered", func() bool {
		return slices.ContainsFunc(g.trimList("q"), func(p drover.Position) bool { return p >= aPos })
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.overtaken) > 0 {
		t.Fatalf("trims sent while a record of their queue was held: %v", g.overtaken)
	}
}

// refusingStarts is a memLog whose start records fail (Redis cannot take
// them) and counts the attempts.
type refusingStarts struct {
	*memLog
	tries atomic.Int32
}

func (l *refusingStarts) RecordStarts(context.Context, []string, []string) ([]int, error) {
	l.tries.Add(1)
	return nil, errors.New("redis: connection refused")
}

// A queue stopped while its next task waits for its start record, which
// Redis does not take, is released at once: the task has not started, so
// there is nothing to drain, and the next owner starts the message. The
// loop retried the record until the drain timeout killed the tasks (30 s
// by default): the queue was held, and run by nobody, all that time.
func TestAStopDoesNotWaitForAStartRecordItCannotWrite(t *testing.T) {
	mem := newMemLog()
	log := &refusingStarts{memLog: mem}
	ex := &scriptedExecutor{}
	clock := testkit.NewClock(t0)
	w := newTestWorker(t, mem, ex, func(c *Config) {
		atDefaults(clock, log)(c)
		c.DrainTimeout = DefaultDrainTimeout
	})
	mem.add("q", msg("m1"))
	claim := &memClaim{}
	if err := w.Start(queueConfig("q", nil), claim); err != nil {
		t.Fatal(err)
	}
	// Before the owner's first commit every start waits for its record.
	waitFor(t, "m1's start record to be refused and retried later", func() bool { return log.tries.Load() >= 1 })
	stopped := make(chan struct{})
	go func() {
		w.StopQueues(context.Background(), []string{"q"}, drover.StopLeave, nil)
		close(stopped)
	}()
	// The injected clock stands still: neither the record's retry nor the
	// drain timeout comes due.
	waitFor(t, "the stop to end without the drain timeout", func() bool {
		select {
		case <-stopped:
			return true
		default:
			return false
		}
	})
	if runs := ex.runList(); len(runs) != 0 {
		t.Fatalf("want m1 not run here (its start was never recorded), have %v", runs)
	}
	if claim.released == nil || claim.released.Position != 0 {
		t.Fatalf("want the queue released before m1 (offset 0), have %+v", claim.released)
	}
}

// A key whose claim's check found nothing after its offset (a new key, or
// one of a fleet turning busy after an idle spell) starts its first
// message without waiting for the start's record, as after a commit: the
// sparse fleet's first minute spent a round trip on a pool slot per key
// (docs/decisions.md, "Issue 43: a key claimed quiet takes its first
// message from its wake-up"). What a crash of that owner can cost stays
// bounded: its held record dies with it, but the message is in the log
// after the offset when the next owner checks the queue, so the next
// owner's start waits for its record, and counts it.
func TestAKeyClaimedQuietStartsAtOnceAndTheNextOwnerCounts(t *testing.T) {
	g := &gatedStarts{memLog: newMemLog()}
	ex1 := &scriptedExecutor{gate: make(chan struct{})} // p holds the first owner: it "kills" it
	w1 := newTestWorker(t, g.memLog, ex1, func(c *Config) { c.Store = g })
	w1.starts.hold = time.Hour // the record would leave only when something needs it
	release := sync.OnceFunc(g.hold())
	defer release()
	if err := w1.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	l1 := w1.loop("q")
	waitFor(t, "the claim's check", func() bool { return l1.checked.Load() && l1.parked() })

	g.add("q", msg("p"))
	w1.Wake("q")
	waitFor(t, "p to start on the first owner", func() bool { return slices.Contains(ex1.runList(), "p#0") })
	if n := g.calls(); n != 0 {
		t.Fatalf("p's start on a queue claimed quiet sent %d record calls before it ran: want none (held)", n)
	}
	if n := w1.State().Stages.StartRecord.Count; n != 0 {
		t.Fatalf("starts that waited for their record on the first owner: want 0, have %d", n)
	}

	// The first owner is gone with p's record held (a kill -9 in the
	// hold). The next owner claims the queue at the same offset.
	ex2 := &scriptedExecutor{}
	w2 := newTestWorker(t, g.memLog, ex2, func(c *Config) { c.Store = g; c.Member = "m2" })
	if err := w2.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	w2.Wake("q")
	waitFor(t, "p's start record to be sent by the next owner", func() bool { return g.calls() > 0 })
	if n := count(ex2.runList(), "p"); n != 0 {
		t.Fatalf("p ran %d times on the next owner while its record was held: its start must wait", n)
	}
	release()
	waitFor(t, "p to run on the next owner", func() bool { return slices.Contains(ex2.runList(), "p#0") })
	if n := g.recorded("q", "p"); n != 1 {
		t.Fatalf("p's recorded starts: want 1 (the next owner's), have %d", n)
	}
}

// A check that finds nothing after what a queue has fetched does not make
// its fetched messages' starts go unawaited: b1, read and waiting for the
// worker's one slot (its loop parks meanwhile), was not committed, so it
// is not known to be a message no one started before. Its start waits for
// its record all the same; were it held, a b1 that kills its worker could
// crash every owner uncounted, each one parking on a busy pool before its
// start.
func TestAStartFetchedBeforeAQuietCheckStillWaitsForItsRecord(t *testing.T) {
	g := &gatedStarts{memLog: newMemLog()}
	g.add("b", msg("b1"))
	ex := &scriptedExecutor{gate: make(chan struct{}, 2)}
	w := newTestWorker(t, g.memLog, ex, func(c *Config) {
		c.Store, c.Capacity, c.Clock = g, 1, testkit.NewClock(t0) // only the checks asked for run
	})
	if err := w.Start(queueConfig("a", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	la := w.loop("a")
	waitFor(t, "a's check", func() bool { return la.checked.Load() && la.parked() })
	g.add("a", msg("a1"))
	w.Wake("a")
	waitFor(t, "a1 to hold the worker's one slot", func() bool { return slices.Contains(ex.runList(), "a1#0") })

	if err := w.Start(queueConfig("b", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	lb := w.loop("b")
	g.memLog.mu.Lock()
	b1 := g.memLog.log["b"][0].Position
	g.memLog.mu.Unlock()
	waitFor(t, "b1 read and b parked for a slot", func() bool {
		return lb.parked() && drover.Position(lb.parkedFetched.Load()) == b1
	})
	checks := w.idle.checkCount()
	w.idle.missed() // a full check: nothing after b1
	waitFor(t, "the full check of b", func() bool { return w.idle.checkCount() > checks && !w.idle.passRunning() })
	if lb.flags.Load()&loopQuiet != 0 {
		t.Fatal("b counted as quiet with b1 fetched and not committed")
	}

	release := sync.OnceFunc(g.hold())
	defer release()
	ex.gate <- struct{}{} // a1 ends: the slot goes to b
	waitFor(t, "b1's start record to be sent", func() bool { return g.recorded("b", "b1") == 0 && g.calls() > 0 })
	if n := count(ex.runList(), "b1"); n != 0 {
		t.Fatalf("b1 ran %d times while its record was held: its start must wait", n)
	}
	release()
	ex.gate <- struct{}{}
	waitFor(t, "b1 to run", func() bool { return slices.Contains(ex.runList(), "b1#0") })
	if n := g.recorded("b", "b1"); n != 1 {
		t.Fatalf("b1's recorded starts: want 1, have %d", n)
	}
}
