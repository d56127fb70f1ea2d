package worker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// posOf is the position of message id in queue q's log.
func posOf(l *memLog, q, id string) drover.Position {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.log[q] {
		if e.ID == id {
			return e.Position
		}
	}
	return 0
}

// trimsOf returns the requests for queue q in the batch trimmer's calls, in
// order.
func trimsOf(l *memLog, q string) []drover.TrimRequest {
	var out []drover.TrimRequest
	for _, b := range l.batches() {
		for _, r := range b {
			if r.Queue == q {
				out = append(out, r)
			}
		}
	}
	return out
}

// A queue that commits while its member is busy gets its outcome records
// written at each commit but its log trimmed only when the trim is due
// (trimDue): a quiet key with a message now and then once it owes trimFew
// messages or its first untrimmed commit is trimAtMost old (a trim of one
// or two messages cost a message five Redis commands), a busier queue
// once that commit is trimEvery old, a key that went quiet trimQuiet after
// its last commit; once the member has no queue running, what is owed is
// trimmed at the next flush.
func TestABusyMembersQueueIsTrimmedByWhatItOwesItsRecordsAtOnce(t *testing.T) {
	b := newBusyMember(t)
	b.run("m1")
	b.run("m2")
	log, mem, q, clock := b.log, b.mem, b.q, b.clock
	trims := trimsOf(log, "q")
	if len(trims) == 0 {
		t.Fatal("no outcome records were written for the two commits")
	}
	mem.mu.Lock()
	records, trimmed := len(mem.outcomes["q"]), len(mem.trims["q"])
	mem.mu.Unlock()
	if records != 2 || trimmed != 0 {
		t.Fatalf("want both records written and the log not trimmed, have %d records, %d trims", records, trimmed)
	}

	// trimEvery after the first commit, a third commit's flush still
	// does not trim: three messages are owed, fewer than trimFew.
	clock.Advance(trimEvery)
	b.run("m3")
	for _, r := range trimsOf(log, "q") {
		if !r.RecordsOnly {
			t.Fatalf("a quiet key trimmed at trimEvery with 3 messages owed: %+v", trimsOf(log, "q"))
		}
	}

	// trimAtMost after the first commit, a flush trims q to its committed
	// offset, while "hold" still runs.
	clock.Advance(trimAtMost - trimEvery)
	waitFor(t, "q trimmed", func() bool {
		return slices.ContainsFunc(trimsOf(log, "q"), func(r drover.TrimRequest) bool { return !r.RecordsOnly })
	})
	full := trimsOf(log, "q")
	last := full[len(full)-1]
	if last.RecordsOnly || last.Offset != q.committed() {
		t.Fatalf("want a trim to the committed offset %d, have %+v", q.committed(), last)
	}

	// trimFew messages owed: the trim is due trimEvery after the first of
	// their commits, not trimAtMost.
	before := len(trimsOf(log, "q"))
	for i := range trimFew {
		b.run(fmt.Sprintf("b%d", i))
	}
	clock.Advance(trimEvery)
	waitFor(t, "a busier q trimmed trimEvery after its first commit", func() bool {
		ts := trimsOf(log, "q")
		return len(ts) > before && !ts[len(ts)-1].RecordsOnly && ts[len(ts)-1].Offset == q.committed()
	})

	// A key that went quiet: trimQuiet after its last commit, with one
	// message owed, its trim is due (the trim that empties its log starts
	// its retire_after).
	before = len(trimsOf(log, "q"))
	b.run("m4")
	clock.Advance(trimQuiet)
	waitFor(t, "a quiet q trimmed trimQuiet after its last commit", func() bool {
		ts := trimsOf(log, "q")
		return len(ts) > before && !ts[len(ts)-1].RecordsOnly && ts[len(ts)-1].Offset == q.committed()
	})

	// A commit now owes a trim again; once hold's task ends and no queue
	// runs, the next flush pays it without waiting.
	b.run("m5")
	before = len(trimsOf(log, "q"))
	close(b.ex.gate("h1"))
	allParked(t, b.w)
	waitFor(t, "the owed trim paid once the member drained", func() bool {
		clock.Advance(DefaultCommitInterval)
		ts := trimsOf(log, "q")
		return len(ts) > before && !ts[len(ts)-1].RecordsOnly && ts[len(ts)-1].Offset == q.committed()
	})
}

// A queue released while its trim is owed is trimmed by its release: the
// log does not keep what its last commits covered until a new owner
// commits.
func TestAReleasedQueueIsTrimmedToItsOwedOffset(t *testing.T) {
	b := newBusyMember(t)
	b.run("m1")
	b.mem.mu.Lock()
	trimmed := len(b.mem.trims["q"])
	b.mem.mu.Unlock()
	if trimmed != 0 {
		t.Fatalf("the trim was not owed: %d trims", trimmed)
	}
	if err := b.w.Stop(context.Background(), "q", drover.StopLeave); err != nil {
		t.Fatal(err)
	}
	b.mem.mu.Lock()
	trims := b.mem.trims["q"]
	b.mem.mu.Unlock()
	if len(trims) == 0 || trims[len(trims)-1] != b.q.committed() {
		t.Fatalf("want the release to trim to %d, have trims %v", b.q.committed(), trims)
	}
}

// busyMember is a worker whose queue "hold" keeps a task running (so the
// member never drains) beside queue "q", on a batch trimmer and a fake
// clock.
type busyMember struct {
	t     *testing.T
	w     *Worker
	mem   *memLog
	log   *memLog
	ex    *gateExecutor
	clock *testkit.Clock
	q     *memClaim
}

func newBusyMember(t *testing.T) *busyMember {
	b := &busyMember{t: t, mem: newMemLog(), ex: newGateExecutor(), clock: testkit.NewClock(t0), q: &memClaim{}}
	b.log = b.mem
	b.w = newTestWorker(t, b.mem, b.ex, func(c *Config) {
		c.Clock, c.Store = b.clock, b.log
		c.CommitInterval, c.PromoteInterval, c.PollInterval = DefaultCommitInterval, DefaultPromoteInterval, DefaultPollInterval
	})
	b.mem.add("hold", msg("h1"))
	if err := b.w.Start(queueConfig("hold", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the held task starts", func() bool { return b.ex.hasStarted("h1") })
	if err := b.w.Start(queueConfig("q", nil), b.q); err != nil {
		t.Fatal(err)
	}
	return b
}

// run enqueues id to q, lets it run and waits for its commit. The clock
// moves only while the offset waits for a flush, so that commits stay well
// inside trimEvery.
func (b *busyMember) run(id string) { b.runOn("q", b.q, id) }

// runOn is run for queue q, claimed with claim; it returns id's position.
func (b *busyMember) runOn(q string, claim *memClaim, id string) drover.Position {
	t := b.t
	t.Helper()
	b.mem.add(q, msg(id))
	b.w.Wake(q)
	waitFor(t, id+" starts", func() bool { return b.ex.hasStarted(id) })
	close(b.ex.gate(id))
	want := posOf(b.mem, q, id)
	waitFor(t, id+" committed", func() bool {
		if claim.committed() == want {
			return true
		}
		b.w.commits.mu.Lock()
		offered := len(b.w.commits.pending) > 0
		b.w.commits.mu.Unlock()
		if offered {
			b.clock.Advance(DefaultCommitInterval)
		}
		return false
	})
	return want
}

// owed returns the trim the committer owes queue q, if any.
func (b *busyMember) owed(q string) (owedTrim, bool) {
	b.w.commits.mu.Lock()
	defer b.w.commits.mu.Unlock()
	for l, o := range b.w.commits.owed {
		if l.name == q {
			return o, true
		}
	}
	return owedTrim{}, false
}

// About one trim in seenSweepOdds of a queue forgets its expired dedupe
// ids (drover.TrimRequest.SweepSeen), decided by the queue's name and the
// trimEvery slot of the committer's clock, not every trim, which cost a
// command a trim on every queue (issue 43); a records-only request never
// does. A queue trimmed at any steady rhythm of at least trimEvery is not
// locked out.
func TestTrimsSweepTheDedupeIdsAboutOneInTen(t *testing.T) {
	for _, period := range []time.Duration{trimEvery, 10 * time.Second, time.Minute} {
		sweeps, gap, longest := 0, 0, 0
		at := time.Unix(1_800_000_007, 0)
		const trims = 10000
		for range trims {
			if sweepsSeen("q", at) {
				sweeps++
				gap = 0
			} else if gap++; gap > longest {
				longest = gap
			}
			at = at.Add(period)
		}
		if sweeps < trims/seenSweepOdds*8/10 || sweeps > trims/seenSweepOdds*12/10 || longest > 150 {
			t.Errorf("trims every %s: want about 1 in %d to sweep, none 150 in a row without, have %d of %d, %d in a row without",
				period, seenSweepOdds, sweeps, trims, longest)
		}
	}

	b := newBusyMember(t)
	log, clock := b.log, b.clock
	// toSlot moves the clock on by whole trimEverys, at least trimAtMost
	// (so that the trim owed, of one message, is due) to the first time at which a trim of q sweeps as want says,
	// in one step: stepping through the slots between let the committer
	// send the trim at one of them (it failed so on a loaded machine).
	toSlot := func(want bool) {
		d := trimAtMost // one message owed: due trimAtMost after its commit
		for sweepsSeen("q", clock.Now().Add(d)) != want {
			d += trimEvery
		}
		clock.Advance(d)
	}
	lastTrim := func(after int) func() bool {
		return func() bool {
			ts := trimsOf(log, "q")
			return len(ts) > after && !ts[len(ts)-1].RecordsOnly
		}
	}
	b.run("m1")
	toSlot(false)
	waitFor(t, "q trimmed in a slot without the sweep", lastTrim(0))
	ts := trimsOf(log, "q")
	if ts[len(ts)-1].SweepSeen {
		t.Fatalf("a trim in a slot without the sweep: have %+v", ts[len(ts)-1])
	}
	n := len(ts)
	b.run("m2")
	toSlot(true)
	waitFor(t, "q trimmed in a slot with the sweep", lastTrim(n))
	ts = trimsOf(log, "q")
	if !ts[len(ts)-1].SweepSeen {
		t.Fatalf("a trim in a slot with the sweep: want it asked, have %+v", ts[len(ts)-1])
	}
	for _, r := range ts {
		if r.RecordsOnly && r.SweepSeen {
			t.Fatalf("a records-only request asks for the sweep: %+v", r)
		}
	}
}

// A queue claimed with processed messages still in its log (its last owner
// committed them and was lost before its trim, whose owed trim is then
// dropped) is trimmed by its new owner even if no message comes again: the
// claim's check finds them (drover.QueueCheck.Stale) and owes the trim as
// if the queue had committed at its claim, so a busy member trims it
// trimQuiet later. Without it such a key kept them for good, never counted
// as empty, and its family never retired it (the chaos run's "stuck" keys).
// A queue claimed with a clean log owes nothing.
func TestAClaimedQueuesUntrimmedLogIsTrimmedByItsNewOwner(t *testing.T) {
	b := newBusyMember(t) // "hold" keeps the member busy; q runs on b.q
	b.mem.add("quiet", msg("k1"))
	b.mem.add("quiet", msg("k2"))
	off := posOf(b.mem, "quiet", "k2")
	if err := b.w.Start(queueConfig("quiet", nil), &memClaim{off: drover.Offset{Position: off}}); err != nil {
		t.Fatal(err)
	}
	if err := b.w.Start(queueConfig("clean", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the claims' check", func() bool { _, ok := b.owed("quiet"); return ok })
	if trims := b.mem.trimList("quiet"); len(trims) != 0 {
		t.Fatalf("trimmed before trimQuiet on a busy member: %v", trims)
	}
	b.clock.Advance(trimQuiet)
	waitFor(t, "quiet trimmed to its claimed offset", func() bool {
		if slices.Contains(b.mem.trimList("quiet"), off) {
			return true
		}
		b.clock.Advance(DefaultCommitInterval) // the committer's next flush
		return false
	})
	if _, ok := b.owed("clean"); ok {
		t.Error("a queue claimed with a clean log owes a trim")
	}
	if trims := b.mem.trimList("clean"); len(trims) != 0 {
		t.Fatalf("a queue claimed with a clean log was trimmed: %v", trims)
	}
}

// A full pass (after missed wake-ups) covers the queues claimed since the
// last one in place of their claims' check, so it owes the trim of a
// queue it checks for the first time whose log still holds processed
// messages, as the claims' check does; a queue checked before (an owner's
// own quiet key, whose owed trim waits its turn) owes nothing from it.
func TestAFullPassOwesTheTrimOfAQueueItChecksFirst(t *testing.T) {
	b := newBusyMember(t)
	b.mem.add("quiet", msg("k1"))
	off := posOf(b.mem, "quiet", "k1")
	l := newQueueLoop(b.w, queueConfig("quiet", nil), &memClaim{off: drover.Offset{Position: off}})
	owes := func() bool {
		b.w.commits.mu.Lock()
		defer b.w.commits.mu.Unlock()
		_, ok := b.w.commits.owed[l]
		return ok
	}
	b.w.idle.checkLoops(&passBuffers{}, []parkedQueue{{loop: l, fetched: off}})
	if !owes() {
		t.Fatal("a full pass over a queue checked for the first time, its log stale: want its trim owed")
	}
	b.w.commits.mu.Lock()
	delete(b.w.commits.owed, l)
	b.w.commits.mu.Unlock()
	b.w.idle.checkLoops(&passBuffers{}, []parkedQueue{{loop: l, fetched: off}})
	if owes() {
		t.Fatal("a full pass over a queue checked before: want no trim owed from it")
	}
}

// A queue with a retention window keeps, at its trim, the processed
// entries younger than the window; a quiet one kept them until its next
// commit, for good if none came (its family never retired it). Its
// committer now trims it once more to the same offset retentionAfter past
// the window: that trim removes them, and has no follow-up of its own. A
// commit in between replaces the follow-up with an ordinary owed trim.
func TestAQuietRetentionQueueIsTrimmedOnceItsWindowHasPassed(t *testing.T) {
	b := newBusyMember(t) // "hold" keeps the member busy
	const window = time.Minute
	claim := &memClaim{}
	if err := b.w.Start(queueConfig("ret", func(qc *drover.QueueConfig) { qc.Retention = drover.Duration(window) }), claim); err != nil {
		t.Fatal(err)
	}
	owed := func() (owedTrim, bool) { return b.owed("ret") }
	run := func(id string) drover.Position { return b.runOn("ret", claim, id) }
	trimmedTo := func(what string, pos drover.Position, n int) {
		t.Helper()
		waitFor(t, what, func() bool {
			trims := b.mem.trimList("ret")
			if len(trims) >= n && trims[n-1] == pos {
				return true
			}
			b.clock.Advance(DefaultCommitInterval)
			return false
		})
	}

	p1 := run("r1")
	b.clock.Advance(trimQuiet)
	trimmedTo("r1's trim", p1, 1)
	trimmedAt := b.clock.Now()
	var o owedTrim
	waitFor(t, "the follow-up owed", func() bool {
		var ok bool
		o, ok = owed()
		return ok
	})
	if !o.retained || o.pos != p1 || o.notBefore.Before(trimmedAt.Add(window)) {
		t.Fatalf("want a retention follow-up to %d no sooner than the window after the trim, have %+v", p1, o)
	}
	b.clock.Advance(window + retentionAfter)
	trimmedTo("the follow-up trim", p1, 2)
	waitFor(t, "no follow-up of the follow-up", func() bool { _, ok := owed(); return !ok })

	// A commit replaces a waiting follow-up with an ordinary owed trim.
	p2 := run("r2")
	b.clock.Advance(trimQuiet)
	trimmedTo("r2's trim", p2, 3)
	waitFor(t, "r2's follow-up owed", func() bool { o, ok := owed(); return ok && o.retained })
	p3 := run("r3")
	waitFor(t, "a commit while a follow-up waits: an ordinary owed trim in its place", func() bool {
		o, ok := owed()
		return ok && !o.retained
	})
	b.clock.Advance(trimQuiet)
	trimmedTo("r3's trim, trimQuiet after its commit", p3, 4)
}
