package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/worker/executor"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// newIdleWorker is a worker on a fake clock with the default intervals:
// nothing timed happens unless the test advances the clock.
func newIdleWorker(t *testing.T, log *memLog, ex Executor) (*Worker, *testkit.Clock) {
	t.Helper()
	clock := testkit.NewClock(t0)
	w := newTestWorker(t, log, ex, func(c *Config) {
		c.Clock = clock
		c.CommitInterval = DefaultCommitInterval
		c.PromoteInterval = DefaultPromoteInterval
		c.PollInterval = DefaultPollInterval
	})
	return w, clock
}

// allParked waits until no queue loop of w has a goroutine.
func allParked(t testing.TB, w *Worker) {
	t.Helper()
	waitFor(t, "every queue loop parked", func() bool { return w.loopGoroutines.Load() == 0 })
}

// allChecked waits until every queue of w had its first check (its
// CheckQueues call counted by the Log). checkCount() >= 1 is not that:
// it counts a pass as it starts, and queues started one by one may be
// checked in several passes, so a test that counts the Log's checks from
// there could count a late first check as one of its own.
func allChecked(t testing.TB, w *Worker) {
	t.Helper()
	waitFor(t, "the started queues checked", func() bool { return everyQueueChecked(w) })
	settleScheduler(t, w) // and checked again once routed here
}

// everyQueueChecked reports whether every queue of w had its first check.
func everyQueueChecked(w *Worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.queues {
		if !l.checked.Load() {
			return false
		}
	}
	return true
}

// A parked queue holds no goroutine: the worker's goroutines do not grow
// with the queues it owns.
func TestParkedQueuesHoldNoGoroutine(t *testing.T) {
	log := newMemLog()
	w, _ := newIdleWorker(t, log, &scriptedExecutor{})
	before := runtime.NumGoroutine()
	const n = 2000
	for i := range n {
		if err := w.Start(queueConfig(fmt.Sprintf("q%04d", i), nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	// The idle scheduler is the one goroutine the queues add; a few more
	// may still be exiting.
	waitFor(t, "goroutines independent of the queues", func() bool { return runtime.NumGoroutine()-before <= 5 })
	if owned := len(w.Owned()); owned != n {
		t.Fatalf("owned: want %d, have %d", n, owned)
	}
}

// A wake-up lost entirely: the message is enqueued, no wake-up arrives, and
// the amortised backstop (one check of all parked queues) still runs it
// once the clock passes the poll interval.
func TestLostWakeupIsRunByTheBackstop(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	w, clock := newIdleWorker(t, log, ex)
	claims := map[string]*memClaim{}
	for i := range 50 {
		q := fmt.Sprintf("q%02d", i)
		claims[q] = &memClaim{}
		if err := w.Start(queueConfig(q, nil), claims[q]); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	allChecked(t, w)
	promotes, checks, reads := log.counts()
	log.add("q07", msg("lost")) // no Wake: the wake-up never arrives
	if runs := ex.runList(); len(runs) != 0 {
		t.Fatalf("without a wake-up or a check: want nothing run, have %v", runs)
	}
	clock.Advance(DefaultPollInterval)
	waitFor(t, "the backstop to run the message", func() bool {
		clock.Advance(DefaultCommitInterval)
		return claims["q07"].committed() == 1
	})
	if runs := ex.runList(); !slices.Equal(runs, []string{"lost#0"}) {
		t.Fatalf("runs: want [lost#0], have %v", runs)
	}
	p2, c2, r2 := log.counts()
	if c2 -= checks; c2 < 1 {
		t.Fatalf("want the backstop check to have run, have %d checks", c2)
	}
	// Amortised: the check covered the 50 queues; only the queue with a
	// message read (and promoted) again, not one per queue.
	if r2-reads > 2*c2 || p2-promotes > 2*c2 {
		t.Fatalf("after %d checks: want reads and promotes of the one woken queue only, have %d reads and %d promotes", c2, r2-reads, p2-promotes)
	}
}

// A due delayed message on a parked queue is promoted when its time comes,
// without a promotion per queue per interval before.
func TestDueMessageOnAParkedQueueIsPromotedWhenDue(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	w, clock := newIdleWorker(t, log, ex)
	claim := &memClaim{}
	for i := range 50 {
		q := fmt.Sprintf("q%02d", i)
		c := &memClaim{}
		if q == "q00" {
			c = claim
		}
		if err := w.Start(queueConfig(q, nil), c); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	allChecked(t, w) // counted below: want 5 backstop checks exactly
	due := t0.Add(30 * time.Second)
	log.addDelayed("q00", msg("later"), due)
	w.WakeAt("q00", due) // the enqueue's wake-up names the due time
	allParked(t, w)
	promotes, checks, _ := log.counts()
	// Second by second, each step once the idle scheduler waits again (its
	// timer is the only one armed: every loop is parked, nothing to commit).
	// A pass runs beside the scheduler's loop: each step also waits for
	// it to end, as the clock moves faster than a pass runs here.
	waiting := func() bool { return clock.Timers() == 1 && !w.idle.passRunning() }
	for clock.Now().Before(due.Add(-time.Second)) {
		waitFor(t, "the idle scheduler to wait", waiting)
		clock.Advance(time.Second)
	}
	waitFor(t, "the idle scheduler to wait", waiting)
	if _, c, _ := log.counts(); c-checks != 5 {
		t.Fatalf("29 s parked: want a backstop check every 5 s (5), have %d", c-checks)
	}
	allParked(t, w)
	if p, _, _ := log.counts(); p != promotes {
		t.Fatalf("before the due time: want no promotion (parked queues do not poll), have %d", p-promotes)
	}
	if runs := ex.runList(); len(runs) != 0 {
		t.Fatalf("before the due time: want nothing run, have %v", runs)
	}
	clock.Advance(time.Second)
	waitFor(t, "the delayed message to run once due", func() bool {
		clock.Advance(DefaultCommitInterval)
		return claim.committed() > 0
	})
	if runs := ex.runList(); !slices.Equal(runs, []string{"later#0"}) {
		t.Fatalf("runs: want [later#0], have %v", runs)
	}
}

// A retry's due time reaches the idle scheduler: the parked queue runs the
// retry when due.
func TestRetryOfAParkedQueueRunsWhenDue(t *testing.T) {
	log := newMemLog()
	log.add("q", msg("flaky"))
	ex := &scriptedExecutor{outcome: func(m *drover.Message) executor.Outcome {
		if m.Attempt == 0 {
			return executor.OutcomeRetry
		}
		return executor.OutcomeSuccess
	}}
	w, clock := newIdleWorker(t, log, ex)
	claim := &memClaim{}
	if err := w.Start(queueConfig("q", func(q *drover.QueueConfig) {
		q.Backoff = drover.Backoff{Base: drover.Duration(time.Minute), Max: drover.Duration(time.Minute)}
	}), claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the retry scheduled", func() bool { return log.retryCount() == 1 })
	allParked(t, w)
	waitFor(t, "the retry to run when due", func() bool {
		clock.Advance(10 * time.Second)
		return claim.committed() > 1
	})
	if runs := ex.runList(); !slices.Equal(runs, []string{"flaky#0", "flaky#1"}) {
		t.Fatalf("runs: want [flaky#0 flaky#1], have %v", runs)
	}
}

// One commit carries every queue that progressed, in one CommitMany call;
// the queue whose claim was fenced out is dropped alone (its loop is lost,
// it never trims) and the others commit. The three finish together, and the
// member's drain sends that commit without waiting for the interval.
func TestCommitBatchDropsTheFencedQueueAlone(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{gate: make(chan struct{})}
	w, clock := newIdleWorker(t, log, ex)
	bc := &batchCommitter{}
	claims := map[string]*batchClaim{}
	for _, q := range []string{"a", "b", "c"} {
		claims[q] = &batchClaim{queue: q, b: bc}
	}
	claims["b"].fenced = true
	for _, q := range []string{"a", "b", "c"} {
		log.add(q, msg("m-"+q))
		if err := w.Start(queueConfig(q, nil), claims[q]); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the three messages run", func() bool { return len(ex.runList()) == 3 })
	// Busy for long enough that the drain flushes early (minBusy).
	clock.Advance(DefaultCommitInterval / minBusy)
	for range 3 {
		ex.gate <- struct{}{}
	}
	waitFor(t, "b dropped as fenced", func() bool { return loopEnded(w, "b") })
	waitFor(t, "a and c committed by the same flush", func() bool {
		return claims["a"].committed() == 1 && claims["c"].committed() == 3
	})
	if calls := bc.callList(); len(calls) != 1 || !slices.Equal(calls[0], []string{"a", "b", "c"}) {
		t.Fatalf("commit calls: want one carrying a, b and c, have %v", calls)
	}
	// The trims are owed, sent in one TrimMany by the flush that finds the
	// member idle (nothing to commit): an interval later.
	waitFor(t, "a trimmed", func() bool {
		clock.Advance(DefaultCommitInterval)
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.trims["a"]) == 1
	})
	log.mu.Lock()
	trimsB, trimsA := len(log.trims["b"]), len(log.trims["a"])
	log.mu.Unlock()
	if trimsB != 0 || trimsA != 1 {
		t.Fatalf("trims: want a trimmed once and b never, have a %d, b %d", trimsA, trimsB)
	}
	for _, q := range []string{"a", "c"} {
		if loopEnded(w, q) {
			t.Fatalf("%s ended with b; want only b dropped", q)
		}
	}
}

// A batched commit that failed without losing its queue (a connection
// blip) is sent again by the next flush; the queue keeps running.
func TestBatchCommitFailureIsRetriedNextFlush(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{gate: make(chan struct{})}
	w, clock := newIdleWorker(t, log, ex)
	bc := &batchCommitter{fail: map[string]error{"a": errors.New("connection blip")}}
	a := &batchClaim{queue: "a", b: bc}
	log.add("a", msg("one"))
	if err := w.Start(queueConfig("a", nil), a); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message runs", func() bool { return len(ex.runList()) == 1 })
	clock.Advance(DefaultCommitInterval / minBusy)
	ex.gate <- struct{}{}
	waitFor(t, "the first commit of a, failed", func() bool { return len(bc.callList()) == 1 })
	if a.committed() != 0 || loopEnded(w, "a") {
		t.Fatalf("after a failed commit: want a running with nothing committed, have committed %d, ended %v", a.committed(), loopEnded(w, "a"))
	}
	clock.Advance(DefaultCommitInterval)
	waitFor(t, "a committed by the next flush", func() bool { return a.committed() == 1 })
	if calls := bc.callList(); len(calls) != 2 || !slices.Equal(calls[1], []string{"a"}) {
		t.Fatalf("commit calls: want the retry in a second call, have %v", calls)
	}
	if loopEnded(w, "a") {
		t.Fatal("a ended after a failure that did not lose it")
	}
}

// A trim that fails (a Redis cut) is sent again once trimRetry has
// passed, though the queue stays idle: it used to be dropped, so a queue
// that went quiet kept its committed message in its log for good, never
// counted as empty, and its family never retired it.
func TestAFailedTrimIsRetriedWhileTheQueueStaysIdle(t *testing.T) {
	log := newMemLog()
	log.failTrims = map[string]int{"a": 1}
	ex := &scriptedExecutor{gate: make(chan struct{})}
	w, clock := newIdleWorker(t, log, ex)
	bc := &batchCommitter{clock: clock}
	a := &batchClaim{queue: "a", b: bc}
	log.add("a", msg("one"))
	if err := w.Start(queueConfig("a", nil), a); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message runs", func() bool { return len(ex.runList()) == 1 })
	clock.Advance(DefaultCommitInterval / minBusy)
	ex.gate <- struct{}{}
	waitFor(t, "a committed", func() bool { return a.committed() == 1 })
	// The idle flushes send the owed trim, which fails.
	waitFor(t, "the trim sent and failed", func() bool {
		clock.Advance(DefaultCommitInterval)
		log.mu.Lock()
		defer log.mu.Unlock()
		return log.failTrims["a"] == 0
	})
	if trims := log.trimList("a"); len(trims) != 0 {
		t.Fatalf("after the failed trim: want a not trimmed, have trims at %v", trims)
	}
	// Nothing runs or commits any more: only a retry can trim it.
	waitFor(t, "the trim sent again and done", func() bool {
		clock.Advance(DefaultCommitInterval)
		return len(log.trimList("a")) == 1
	})
	if trims := log.trimList("a"); trims[0] != 1 {
		t.Fatalf("want a trimmed at its committed offset 1, have %v", trims)
	}
	waitFor(t, "the flush goroutine ends once nothing is owed", func() bool {
		clock.Advance(DefaultCommitInterval)
		w.commits.mu.Lock()
		defer w.commits.mu.Unlock()
		return !w.commits.running
	})
}

// The same for the trim of a release (the queue stops here: a member that
// gives its queues up while Redis is cut): the committer sends it again.
func TestAReleasesFailedTrimIsRetried(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{gate: make(chan struct{})}
	w, clock := newIdleWorker(t, log, ex)
	a := &memClaim{}
	log.add("a", msg("one"))
	if err := w.Start(queueConfig("a", nil), a); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message runs", func() bool { return len(ex.runList()) == 1 })
	ex.gate <- struct{}{}
	waitFor(t, "the run's offset offered", func() bool {
		w.commits.mu.Lock()
		defer w.commits.mu.Unlock()
		return len(w.commits.pending) == 1
	})
	log.mu.Lock()
	log.failTrims = map[string]int{"a": 1}
	log.mu.Unlock()
	if err := w.Stop(context.Background(), "a", drover.StopLeave); err != nil {
		t.Fatal(err)
	}
	if trims := log.trimList("a"); len(trims) != 0 {
		t.Fatalf("after the release's failed trim: want a not trimmed, have trims at %v", trims)
	}
	waitFor(t, "the release's trim sent again by the committer", func() bool {
		clock.Advance(DefaultCommitInterval)
		return len(log.trimList("a")) == 1
	})
	if trims := log.trimList("a"); trims[0] != 1 {
		t.Fatalf("want a trimmed at its released offset 1, have %v", trims)
	}
}

// When the whole member drains (no queue loop runs: nothing in flight,
// nothing waiting to run) after being busy for a while, its offsets are
// committed at once, not at the interval's end (the commit tail of a run
// that ends). A drain after a short burst (a member draining between
// messages all the time) waits for the timed flush, and so does a drain
// less than an interval after an early flush: early flushes are an
// interval apart.
func TestDrainedMemberCommitsAtOnceAnIntervalApart(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{gate: make(chan struct{})}
	w, clock := newIdleWorker(t, log, ex)
	bc := &batchCommitter{clock: clock}
	a := &batchClaim{queue: "a", b: bc}
	const i = DefaultCommitInterval
	runOne := func(id string, busy time.Duration) {
		t.Helper()
		drains := w.commits.drains.Load()
		runs := len(ex.runList())
		log.add("a", msg(id))
		w.Wake("a")
		waitFor(t, id+" runs", func() bool { return len(ex.runList()) == runs+1 })
		clock.Advance(busy)
		ex.gate <- struct{}{}
		waitFor(t, id+": the drain seen", func() bool { return w.commits.drains.Load() > drains })
	}
	if err := w.Start(queueConfig("a", nil), a); err != nil {
		t.Fatal(err)
	}
	// Busy for i/minBusy (the clock stands still otherwise, and no timer
	// comes due): only the drain can flush.
	runOne("one", i/minBusy)
	waitFor(t, "the drained member's commit", func() bool { return a.committed() == 1 })
	// Busy long enough, but an interval has not passed since the early
	// flush: no early flush; the timed one, an interval after the early
	// one, carries it.
	runOne("two", i/2)
	if n := len(bc.callList()); n != 1 {
		t.Fatalf("a drain half an interval after an early flush: want no flush, have %d calls", n)
	}
	clock.Advance(i - i/2)
	waitFor(t, "the timed commit", func() bool { return a.committed() == 2 })
	// An interval later (nothing waits: the flush goroutine ends), a short
	// burst: no early flush; the timed one commits it.
	// The first idle flush (an interval later) sends the owed trim; the
	// next ends the goroutine.
	clock.Advance(i)
	waitFor(t, "the owed trim sent", func() bool { return len(log.trimList("a")) > 0 })
	clock.Advance(i)
	waitFor(t, "the flush goroutine ends", func() bool {
		w.commits.mu.Lock()
		defer w.commits.mu.Unlock()
		return !w.commits.running
	})
	runOne("three", 0)
	if n := len(bc.callList()); n != 2 {
		t.Fatalf("a drain after a short burst: want no flush, have %d calls", n-2)
	}
	clock.Advance(i)
	waitFor(t, "the timed commit after the burst", func() bool { return a.committed() == 3 })
	bc.mu.Lock()
	at := slices.Clone(bc.at)
	bc.mu.Unlock()
	start := t0.Add(i / minBusy)
	if want := []time.Time{start, start.Add(i), start.Add(4 * i)}; !slices.Equal(at, want) {
		t.Fatalf("flush times: want %v, have %v", want, at)
	}
}

// Signals racing with a loop that parks: every message runs exactly once,
// and once the storm ends the loop is parked with no goroutine (run with
// -race: two run goroutines at once would race on the loop's state).
func TestSignalsRacingWithParking(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	w := newTestWorker(t, log, ex, nil)
	claim := &memClaim{}
	if err := w.Start(queueConfig("q", nil), claim); err != nil {
		t.Fatal(err)
	}
	const n = 300
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / 4 {
				log.add("q", msg(fmt.Sprintf("g%d-%03d", g, i)))
				w.Wake("q")
				w.Wake("q")
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	w.Wake("q")
	waitFor(t, "every message committed", func() bool { return claim.committed() == n })
	allParked(t, w)
	runs := ex.runList()
	if len(runs) != n || len(slices.Compact(sortedCopy(runs))) != n {
		t.Fatalf("want %d messages run once each, have %d runs (%d distinct)", n, len(runs), len(slices.Compact(sortedCopy(runs))))
	}
}

// A pause does not start the parked queues, nor does the end of a pause of
// all queues; an offset reset while the queue is parked and paused is still
// caught: the queue resumed by name verifies at once, the queues of a
// member resumed are verified by the idle scheduler a batch per pass, and
// the reset queue is dropped without a write.
func TestPauseAndResetWhileParkedStillVerifies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pause PauseState
	}{
		{"all", PauseState{All: true}},
		{"member", PauseState{Member: true}},
		{"queue", PauseState{Queues: map[string]bool{"q": true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := newMemLog()
			ex := &scriptedExecutor{}
			w, _ := newIdleWorker(t, log, ex)
			claim := &verifyingClaim{}
			if err := w.Start(queueConfig("q", nil), claim); err != nil {
				t.Fatal(err)
			}
			others := map[string]*verifyingClaim{}
			for i := range 20 {
				q := fmt.Sprintf("other%02d", i)
				others[q] = &verifyingClaim{}
				if err := w.Start(queueConfig(q, nil), others[q]); err != nil {
					t.Fatal(err)
				}
			}
			allParked(t, w)
			w.SetPause(tc.pause)
			if n := w.loopGoroutines.Load(); n != 0 {
				t.Fatalf("a pause started %d parked queue loops; want none", n)
			}
			claim.reset.Store(true) // an operator resets the offset while paused
			w.SetPause(PauseState{})
			// A queue resumed by name starts alone. After a pause of all
			// or of the member the idle scheduler starts the parked queues'
			// verifications, a batch per pass, concurrently with this
			// line (TestResumeOfTheMemberVerifiesParkedQueuesInBatches
			// bounds those batches).
			if n := w.loopGoroutines.Load(); tc.name == "queue" && n > 1 {
				t.Fatalf("a resume started %d parked queue loops at once; want at most the resumed queue", n)
			}
			waitFor(t, "the reset queue to be dropped as fenced", func() bool { return loopEnded(w, "q") })
			if claim.verifys.Load() == 0 {
				t.Fatal("want the claim verified after the pause")
			}
			if runs := ex.runList(); len(runs) != 0 {
				t.Fatalf("a reset queue must start nothing, have %v", runs)
			}
			claim.mu.Lock()
			defer claim.mu.Unlock()
			if len(claim.commits) != 0 || claim.released != nil {
				t.Fatalf("a fenced queue must write nothing: commits %v released %v", claim.commits, claim.released)
			}
			if tc.name == "queue" {
				for q, c := range others {
					if c.verifys.Load() != 0 {
						t.Fatalf("a pause of q alone verified %s too", q)
					}
				}
			}
		})
	}
}

// Stop and Abort of a parked queue still shut it down: Stop releases with
// the final offset, Abort writes nothing.
func TestStopAndAbortOfAParkedQueue(t *testing.T) {
	log := newMemLog()
	log.add("s", msg("one"))
	log.add("busy", msg("hold"))
	ex := newHoldingExecutor()
	w, _ := newIdleWorker(t, log, ex)
	stopped, aborted := &memClaim{}, &memClaim{}
	// A task held in another queue keeps the member from draining: s's
	// done offset waits for the interval, uncommitted.
	if err := w.Start(queueConfig("busy", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the held task runs", func() bool { return ex.held.Load() == 1 })
	if err := w.Start(queueConfig("s", nil), stopped); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(queueConfig("a", nil), aborted); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "s to run its message", func() bool { return len(ex.runList()) == 1 })
	waitFor(t, "s and a parked", func() bool { return w.loop("s").parked() && w.loop("a").parked() })
	if c := stopped.committed(); c != 0 {
		t.Fatalf("before the commit interval: want nothing committed, have %d", c)
	}
	if err := w.Stop(context.Background(), "s", drover.StopLeave); err != nil {
		t.Fatal(err)
	}
	stopped.mu.Lock()
	rel := stopped.released
	stopped.mu.Unlock()
	if rel == nil || rel.Position != 1 {
		t.Fatalf("stop of a parked queue: want a release at 1 (the uncommitted done offset), have %+v", rel)
	}
	w.Abort("a")
	aborted.mu.Lock()
	defer aborted.mu.Unlock()
	if aborted.released != nil || len(aborted.commits) != 0 {
		t.Fatalf("abort of a parked queue: want no write, have commits %v released %v", aborted.commits, aborted.released)
	}
	if owned := w.Owned(); !slices.Equal(owned, []string{"busy"}) {
		t.Fatalf("want only busy owned, have %v", owned)
	}
}

// BenchmarkParkedQueueFootprint reports what a parked queue costs the
// worker: heap bytes and goroutines per owned queue (the queue's claim
// and the Redis client are not counted).
func BenchmarkParkedQueueFootprint(b *testing.B) {
	const n = 25000
	for range b.N {
		log := newMemLog()
		clock := testkit.NewClock(t0)
		w, err := New(Config{Member: "m", Store: log, Executor: &scriptedExecutor{}, Clock: clock})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		for i := range n {
			if err := w.Start(queueConfig(fmt.Sprintf("queue-%05d", i), nil), &memClaim{}); err != nil {
				b.Fatal(err)
			}
		}
		testkit.Eventually(b, "every queue parked", func() bool { return w.loopGoroutines.Load() == 0 })
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/queue")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines")
		w.AbortAll()
	}
}

// After a pause of the whole member, the parked queues' claims are verified
// a batch per pass of the idle scheduler, not all at once when the pause
// ends: every claim is verified in the end.
func TestResumeOfTheMemberVerifiesParkedQueuesInBatches(t *testing.T) {
	log := newMemLog()
	w, clock := newIdleWorker(t, log, &scriptedExecutor{})
	const n = 2*verifyPerPass + 100
	claims := make([]*verifyingClaim, n)
	for i := range claims {
		claims[i] = &verifyingClaim{}
		if err := w.Start(queueConfig(fmt.Sprintf("q%04d", i), nil), claims[i]); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	waitFor(t, "the started queues checked", func() bool { return w.idle.checkCount() >= 1 })
	w.SetPause(PauseState{Member: true})
	// Counted before the resume: the resume kicks the scheduler, whose
	// first batch may have counted its check before a read after it (the
	// test then saw 2 passes of 3, under load).
	passes := w.idle.checkCount()
	w.SetPause(PauseState{})
	// The idle scheduler may be starting its first batch already; the
	// next needs the clock to pass verifyPause.
	if g := w.loopGoroutines.Load(); g > verifyPerPass {
		t.Fatalf("the end of the pause started %d loops at once; want at most a batch (%d)", g, verifyPerPass)
	}
	waitFor(t, "every claim verified", func() bool {
		clock.Advance(verifyPause)
		for _, c := range claims {
			if c.verifys.Load() == 0 {
				return false
			}
		}
		return true
	})
	if p := w.idle.checkCount() - passes; p < 3 {
		t.Fatalf("want the %d queues verified over at least 3 passes (%d per pass), have %d passes", n, verifyPerPass, p)
	}
	allParked(t, w)
}

// The periodic backstop reads heads (a key lookup per queue, Store.QueueHeads),
// not the full check: that one runs for queues just started and after
// missed wake-ups only. A queue woken for a head it finds nothing at (the
// message was removed before it read) is not woken again for that head.
func TestPeriodicBackstopReadsHeadsOnly(t *testing.T) {
	log := newMemLog()
	w, clock := newIdleWorker(t, log, &scriptedExecutor{})
	for i := range 50 {
		if err := w.Start(queueConfig(fmt.Sprintf("q%02d", i), nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	// Every queue's check has returned (checkCount counts a pass as it
	// starts, before its CheckQueues call is counted), and its check once
	// its wake-ups are routed here.
	allChecked(t, w)
	full := log.fullChecks()
	_, _, reads := log.counts()
	log.add("q03", msg("gone")) // q03's head moves…
	log.drop("q03")             // …but the message is gone before the owner reads
	for i := range 3 {
		passes := w.idle.checkCount()
		clock.Advance(DefaultPollInterval)
		waitFor(t, fmt.Sprintf("backstop pass %d", i+1), func() bool { return w.idle.checkCount() > passes })
		allParked(t, w)
	}
	if f := log.fullChecks(); f != full {
		t.Fatalf("periodic passes: want no full check, have %d", f-full)
	}
	if _, _, r := log.counts(); r-reads != 1 {
		t.Fatalf("three passes over a head with nothing behind it: want q03 read once, have %d reads", r-reads)
	}
	w.MissedWakeups()
	waitFor(t, "a full check after missed wake-ups", func() bool { return log.fullChecks() > full })
}

// holdAPeriodicPass starts queue "a" on w, parked and checked, then holds
// the next periodic backstop pass in its heads read, and returns what lets
// it go (also called when the test ends).
func holdAPeriodicPass(t *testing.T, w *Worker, log *memLog, clock *testkit.Clock) (release func()) {
	t.Helper()
	if err := w.Start(queueConfig("a", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	allParked(t, w)
	allChecked(t, w)
	gate := make(chan struct{})
	log.mu.Lock()
	log.headsGate = gate
	log.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	// A periodic pass starts and is held in its heads read. The clock moves
	// on until it does: the idle scheduler arms its next pass after the
	// first check returns, and a move made before that is lost (the test
	// waited 90 s for a pass under load).
	waitFor(t, "the periodic pass to read heads", func() bool {
		log.mu.Lock()
		held := log.headsHeld
		log.mu.Unlock()
		if held == 0 {
			clock.Advance(DefaultPollInterval)
		}
		return held >= 1
	})
	return release
}

// A queue started while a periodic pass is under way gets its full check
// (which learns its delayed messages' due times) even when the next
// iteration is a periodic pass too: the heads read alone would never see a
// delayed message, so it would wait for a missed wake-up to be promoted.
func TestQueueStartedDuringAPeriodicPassLearnsItsDueTimes(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	w, clock := newIdleWorker(t, log, ex)
	release := holdAPeriodicPass(t, w, log, clock)
	due := clock.Now().Add(30 * time.Second)
	log.addDelayed("b", msg("later"), due) // enqueued before b's owner routed its wake-ups
	if err := w.Start(queueConfig("b", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(DefaultPollInterval) // the next iteration is a periodic pass as well
	release()
	waitFor(t, "b's delayed message to run when due", func() bool {
		clock.Advance(time.Second)
		return slices.Contains(ex.runList(), "later#0")
	})
}

// A queue started while a periodic pass is under way is checked and run
// without waiting for the pass: the pass runs beside the scheduler's loop.
// A pass over 50,000 parked queues held a loaded member's new queues up
// to half a second, every poll interval (docs/decisions.md, "Issue 40:
// where a new key's first start waits").
func TestAQueueStartedDuringAPeriodicPassRunsBeforeThePassEnds(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	w, clock := newIdleWorker(t, log, ex)
	release := holdAPeriodicPass(t, w, log, clock)
	log.add("b", msg("first")) // enqueued before b's owner routed its wake-ups
	if err := w.Start(queueConfig("b", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b's message to run while the pass is held", func() bool {
		return slices.Contains(ex.runList(), "first#0")
	})
	release()
	allParked(t, w)
}

// While a pass runs, a pass asked for meanwhile (missed wake-ups, its
// interval passed) waits for it to end: the scheduler's loop arms its
// timer and sleeps, where a first version of the pass on its own goroutine
// re-armed it at zero, round after round, until the pass ended.
func TestALoopWaitsForTheRunningPassWithoutSpinning(t *testing.T) {
	log := newMemLog()
	w, clock := newIdleWorker(t, log, &scriptedExecutor{})
	holdAPeriodicPass(t, w, log, clock)
	armed := clock.Timers() // the loop sleeps on its timer
	clock.Advance(2 * DefaultPollInterval)
	passes := w.idle.passCount()
	w.MissedWakeups()
	waitFor(t, "the loop to take the missed wake-ups in", func() bool { return w.idle.passCount() > passes })
	waitFor(t, "the loop to sleep on its timer again while the pass is held", func() bool { return clock.Timers() == armed })
}

// gatedClaim is a memClaim whose commits wait for the test: entered gets
// each commit as it starts, and it returns when gate gets a value.
type gatedClaim struct {
	memClaim
	entered chan drover.Position
	gate    chan struct{}
}

func (c *gatedClaim) Commit(ctx context.Context, off drover.Offset) error {
	c.entered <- off.Position
	<-c.gate
	return c.memClaim.Commit(ctx, off)
}

// next returns the position of the next commit to start, waiting for it
// as long as testkit.Eventually would.
func (c *gatedClaim) next(t *testing.T, what string) drover.Position {
	t.Helper()
	var p drover.Position
	testkit.Eventually(t, what, func() bool {
		select {
		case p = <-c.entered:
			return true
		default:
			return false
		}
	})
	return p
}

// The commit interval runs from one flush's start to the next, not from a
// flush's end: a slow flush does not add its own duration to the wait of
// the offsets offered while it ran (with the interval timed from the end,
// a drained queue's commit waited up to an interval plus a flush).
func TestCommitIntervalRunsFromFlushStartToFlushStart(t *testing.T) {
	log := newMemLog()
	ex := newHoldingExecutor()
	w, clock := newIdleWorker(t, log, ex)
	// A task held in another queue keeps the member from draining: only
	// the interval flushes (an early flush is TestDrainedMember…'s).
	log.add("busy", msg("hold"))
	if err := w.Start(queueConfig("busy", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the held task runs", func() bool { return ex.held.Load() == 1 })
	claim := &gatedClaim{entered: make(chan drover.Position, 4), gate: make(chan struct{})}
	log.add("a", msg("one"))
	if err := w.Start(queueConfig("a", nil), claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first message runs", func() bool { return len(ex.runList()) == 1 })
	waitFor(t, "a parked", func() bool { return w.loop("a").parked() })
	select {
	case p := <-claim.entered:
		t.Fatalf("a commit of %d before the interval, the member busy", p)
	default:
	}
	clock.Advance(DefaultCommitInterval) // the first flush starts…
	if p := claim.next(t, "the first flush"); p != 2 {
		t.Fatalf("first flush: want position 2 (busy's message is 1), have %d", p)
	}
	clock.Advance(DefaultCommitInterval / 2) // …and takes half an interval
	log.add("a", msg("two"))
	w.Wake("a")
	waitFor(t, "the second message runs", func() bool { return len(ex.runList()) == 2 })
	claim.gate <- struct{}{} // the first flush ends
	waitFor(t, "the first offset committed", func() bool { return claim.committed() == 2 })
	// Half an interval after the first flush ended is a whole interval
	// after it started: the second flush is due.
	clock.Advance(DefaultCommitInterval / 2)
	if p := claim.next(t, "the second flush, an interval after the first started"); p != 3 {
		t.Fatalf("second flush: want position 3, have %d", p)
	}
	claim.gate <- struct{}{}
	waitFor(t, "the second offset committed", func() bool { return claim.committed() == 3 })
}

// A claim that is a BatchClaim by type but gives no committer (a wrapper
// whose wrapped claim cannot batch) commits alone, through Commit.
func TestBatchClaimWithoutCommitterCommitsAlone(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	w, clock := newIdleWorker(t, log, ex)
	c := &noCommitterClaim{}
	log.add("a", msg("one"))
	if err := w.Start(queueConfig("a", nil), c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message runs", func() bool { return len(ex.runList()) == 1 })
	allParked(t, w)
	clock.Advance(DefaultCommitInterval)
	waitFor(t, "a committed through Commit", func() bool { return c.committed() == 1 })
}

// noCommitterClaim is a memClaim whose Committer is nil.
type noCommitterClaim struct{ memClaim }

func (c *noCommitterClaim) Committer() drover.ClaimCommitter { return nil }

// BenchmarkRanQueueFootprint is BenchmarkParkedQueueFootprint for queues
// that each ran one task, had it committed and parked again: what a queue
// that ran once keeps while idle.
func BenchmarkRanQueueFootprint(b *testing.B) {
	const n = 25000
	if os.Getenv("DROVER_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	for range b.N {
		log := newMemLog()
		for i := range n {
			log.add(fmt.Sprintf("queue-%05d", i), msg("one"))
		}
		clock := testkit.NewClock(t0)
		ex := &scriptedExecutor{}
		w, err := New(Config{Member: "m", Store: log, Executor: ex, Clock: clock})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		claims := make([]*memClaim, n)
		for i := range n {
			claims[i] = &memClaim{}
			if err := w.Start(queueConfig(fmt.Sprintf("queue-%05d", i), nil), claims[i]); err != nil {
				b.Fatal(err)
			}
		}
		testkit.Eventually(b, "every queue ran and parked", func() bool {
			return len(ex.runList()) == n && w.loopGoroutines.Load() == 0
		})
		testkit.Eventually(b, "every queue committed", func() bool {
			clock.Advance(time.Second)
			for _, c := range claims {
				if c.committed() == 0 {
					return false
				}
			}
			w.commits.mu.Lock()
			defer w.commits.mu.Unlock()
			return !w.commits.running // trimmed, its goroutine gone
		})
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/queue")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines")
		if p := os.Getenv("DROVER_HEAP_PROFILE"); p != "" {
			f, _ := os.Create(p)
			pprof.WriteHeapProfile(f)
			f.Close()
		}
		w.AbortAll()
	}
}

// A queue that ran a task and parked keeps neither its in-flight map nor
// its outcome buffer: with 25,000 queues that each ran once, they held
// about 10 MB of a worker's live heap (BenchmarkRanQueueFootprint).
func TestAParkedQueueKeepsNoTurnBuffers(t *testing.T) {
	log := newMemLog()
	log.add("q", msg("one"))
	ex := &scriptedExecutor{}
	w, clock := newIdleWorker(t, log, ex)
	c := &memClaim{}
	if err := w.Start(queueConfig("q", nil), c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task ran and the queue parked", func() bool { return len(ex.runList()) == 1 && w.loop("q").parked() })
	waitFor(t, "the commit", func() bool {
		clock.Advance(DefaultCommitInterval)
		return c.committed() != 0
	})
	allParked(t, w)
	l := w.loop("q")
	l.mu.Lock()
	inflight := l.inflight
	l.mu.Unlock()
	if inflight != nil {
		t.Errorf("parked queue keeps its in-flight map (%d entries)", len(inflight))
	}
	if l.outcomes != nil {
		t.Errorf("parked queue keeps its outcome buffer (len %d, cap %d)", len(l.outcomes), cap(l.outcomes))
	}
}

// A periodic pass compares each head with the queue as it is when the
// heads come back, not as the pass listed it: the heads of thousands of
// parked queues take hundreds of ms to come back on a loaded member, and a
// key that took its next message from its wake-up meanwhile has nothing
// to read. Such reads, each finding nothing, were about one for every 25
// messages of the sparse fleet's steady state.
func TestAPeriodicPassLeavesAQueueThatTookItsMessageMeanwhile(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	w, clock := newIdleWorker(t, log, ex)
	release := holdAPeriodicPass(t, w, log, clock) // a, parked at 0, listed by the pass
	l := w.loop("a")
	log.add("a", msg("m"))
	log.mu.Lock()
	m := log.log["a"][0]
	log.mu.Unlock()
	_, _, reads := log.counts()
	w.WakeWith(drover.Wakeup{Queue: "a", Prev: 0, Entry: &m})
	waitFor(t, "m to run from its wake-up and a to park after it", func() bool {
		return slices.Contains(ex.runList(), "m#0") && l.parked() && l.parkedFetched.Load() == int64(m.Position)
	})
	release()
	waitFor(t, "the pass to end", func() bool { return !w.idle.passRunning() })
	waitFor(t, "a parked", l.parked)
	if _, _, r := log.counts(); r != reads {
		t.Fatalf("the pass found a's head at m, which a took meanwhile: want no read, have %d", r-reads)
	}
}
