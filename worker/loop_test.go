package worker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/worker/executor"
)

// waitFor polls cond until it holds (testkit.Eventually).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, what, cond)
}

func newTestWorker(t *testing.T, log *memLog, ex Executor, mod func(*Config)) *Worker {
	t.Helper()
	cfg := Config{
		Member: "m1", Capacity: 8, BatchSize: 7, Store: log, Executor: ex,
		CommitInterval: time.Millisecond, PromoteInterval: 5 * time.Millisecond, PollInterval: 10 * time.Millisecond,
		DrainTimeout: 5 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.AbortAll)
	return w
}

// atDefaults is a newTestWorker modifier: the worker runs on clock with
// the default commit, promote and poll intervals (not the tests' short
// ones), so that only the test moves its timers, and store as its Store.
func atDefaults(clock drover.TimerClock, store Store) func(*Config) {
	return func(c *Config) {
		c.Clock, c.Store = clock, store
		c.CommitInterval, c.PromoteInterval, c.PollInterval = DefaultCommitInterval, DefaultPromoteInterval, DefaultPollInterval
	}
}

func queueConfig(name string, mod func(*drover.QueueConfig)) drover.QueueConfig {
	qc := drover.QueueConfig{Name: name, Concurrency: 4, MaxAttempts: 3,
		Backoff: drover.Backoff{Base: drover.Duration(time.Millisecond), Max: drover.Duration(2 * time.Millisecond)},
		Tasks:   map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}
	if mod != nil {
		mod(&qc)
	}
	return qc
}

func msg(id string) *drover.Message { return &drover.Message{ID: id, Task: "t"} }

func TestEveryMessageRunsOnceAndOffsetIsContiguous(t *testing.T) {
	log := newMemLog()
	for i := 0; i < 50; i++ {
		log.add("q", msg(fmt.Sprintf("m%02d", i)))
	}
	ex := &scriptedExecutor{}
	w := newTestWorker(t, log, ex, nil)
	claim := &memClaim{}
	if err := w.Start(queueConfig("q", nil), claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "offset at the last message", func() bool { return claim.committed() == 50 })

	runs := ex.runList()
	if len(runs) != 50 {
		t.Fatalf("runs: want 50, have %d", len(runs))
	}
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r] {
			t.Fatalf("%s ran twice", r)
		}
		seen[r] = true
	}
	claim.mu.Lock()
	commits := append([]drover.Position(nil), claim.commits...)
	claim.mu.Unlock()
	if !slices.IsSorted(commits) {
		t.Fatalf("commits went backwards: %v", commits)
	}
	// The trim follows the commit in the committer's flush: the offset is
	// visible at 50 before the flush trims.
	waitFor(t, "the last trim at 50", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		trims := log.trims["q"]
		return len(trims) > 0 && trims[len(trims)-1] == 50
	})
	if ex.maxRun > 4 {
		t.Fatalf("concurrency: want at most 4 at once, have %d", ex.maxRun)
	}
}

func TestFencedCommitStopsQueueAndNeverTrims(t *testing.T) {
	log := newMemLog()
	log.add("q", msg("a"))
	ex := &scriptedExecutor{}
	w := newTestWorker(t, log, ex, nil)
	claim := &memClaim{fenced: true}
	if err := w.Start(queueConfig("q", nil), claim); err != nil {
		t.Fatal(err)
	}
	trims := func() int { log.mu.Lock(); defer log.mu.Unlock(); return len(log.trims["q"]) }
	// Whichever comes first: the loop ends (the fence holds), or a commit or
	// a trim gets through (it does not).
	waitFor(t, "the queue loop to end", func() bool {
		claim.mu.Lock()
		commits := len(claim.commits)
		claim.mu.Unlock()
		return loopEnded(w, "q") || trims() > 0 || commits > 0
	})
	if !loopEnded(w, "q") || trims() != 0 || claim.committed() != 0 {
		t.Fatalf("a fenced owner must stop with nothing committed or trimmed; have loop ended %v, %d trims, offset %d",
			loopEnded(w, "q"), trims(), claim.committed())
	}
	// The reconciler, told by the claim, aborts the queue and claims it
	// again: the next owner starts from the offset the fence kept, so a
	// runs again (at least once, never lost), then b, which the fenced
	// owner never saw.
	log.add("q", msg("b"))
	w.Abort("q")
	next := &memClaim{}
	if err := w.Start(queueConfig("q", nil), next); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the next owner to commit a and b", func() bool { return next.committed() == 2 })
	// The next owner runs a and b concurrently (Concurrency 4): in either
	// order. a's second start is its attempt 1: attempts live with the
	// message, not with its owner.
	if runs := ex.runList(); len(runs) != 3 || runs[0] != "a#0" || !slices.Equal(sortedCopy(runs[1:]), []string{"a#1", "b#0"}) {
		t.Fatalf("want a by the fenced owner, then a and b by the next; have %v", runs)
	}
}

func TestPauseStopsNewTasksWithoutLosingThem(t *testing.T) {
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
			w := newTestWorker(t, log, ex, nil)
			w.SetPause(tc.pause)
			claim := &memClaim{}
			if err := w.Start(queueConfig("q", nil), claim); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 5; i++ {
				log.add("q", msg(fmt.Sprintf("m%d", i)))
			}
			// Two whole loop iterations after wakes (a paused loop parks
			// between them) start nothing.
			p := w.iterationCount.Load()
			waitFor(t, "two loop iterations", func() bool { w.Wake("q"); return w.iterationCount.Load() >= p+2 })
			if runs := ex.runList(); len(runs) != 0 {
				t.Fatalf("paused: want no task started, have %v", runs)
			}
			if st := w.State(); !st.Queues[0].Paused {
				t.Fatalf("state: want the queue reported paused")
			}
			w.SetPause(PauseState{})
			waitFor(t, "all five after resume", func() bool { return claim.committed() == 5 })
		})
	}
}

func TestOrderedQueueRetriesInPlaceAndKeepsOrder(t *testing.T) {
	log := newMemLog()
	for _, id := range []string{"a", "b", "c"} {
		log.add("q", msg(id))
	}
	ex := &scriptedExecutor{outcome: func(m *drover.Message) executor.Outcome {
		if m.ID == "b" && m.Attempt < 2 {
			return executor.OutcomeRetry
		}
		return executor.OutcomeSuccess
	}}
	w := newTestWorker(t, log, ex, nil)
	claim := &memClaim{}
	if err := w.Start(queueConfig("q", func(q *drover.QueueConfig) { q.Ordered = true; q.Concurrency = 0 }), claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all three", func() bool { return claim.committed() == 3 })
	want := []string{"a#0", "b#0", "b#1", "b#2", "c#0"}
	if have := ex.runList(); !slices.Equal(have, want) {
		t.Fatalf("runs: want %v, have %v", want, have)
	}
	if ex.maxRun != 1 {
		t.Fatalf("ordered: want one task at a time, have %d", ex.maxRun)
	}
	if log.retries != 0 {
		t.Fatalf("ordered retries must stay in place, have %d delayed retries", log.retries)
	}
}

func TestFailuresRetryThenDeadLetter(t *testing.T) {
	log := newMemLog()
	log.add("q", msg("bad"))
	log.add("q", msg("good"))
	ex := &scriptedExecutor{outcome: func(m *drover.Message) executor.Outcome {
		if m.ID == "bad" {
			return executor.OutcomeFailure
		}
		return executor.OutcomeSuccess
	}}
	w := newTestWorker(t, log, ex, nil)
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a dead letter", func() bool { return log.deadCount("q") == 1 })
	runs := sortedCopy(ex.runList())
	want := []string{"bad#0", "bad#1", "bad#2", "good#0"}
	if !slices.Equal(runs, want) {
		t.Fatalf("runs: want %v, have %v", want, runs)
	}
	log.mu.Lock()
	dl := log.dead["q"][0]
	log.mu.Unlock()
	if dl.ID != "bad" || dl.Failure.ExitCode != 1 || dl.Failure.StderrTail != "boom" {
		t.Fatalf("dead letter: want bad with exit 1 and stderr boom, have %+v", dl)
	}
	// One numbering: the reason counts attempts as the envelope does (it
	// said "attempt 3 of 3" beside attempt 2).
	if want := "(attempt 2, the last of max_attempts 3)"; dl.Message.Attempt != 2 || !strings.HasSuffix(dl.Failure.Reason, want) {
		t.Fatalf("dead letter: want attempt 2 and a reason ending %q, have attempt %d and %q", want, dl.Message.Attempt, dl.Failure.Reason)
	}
	if log.retries != 2 {
		t.Fatalf("retries through the delayed set: want 2, have %d", log.retries)
	}
}

// TestInFlightTaskShowsItsPID: /debug/state (and so `ctl dump`) gives the
// pid of a running task, as soon as its process has started.
func TestInFlightTaskShowsItsPID(t *testing.T) {
	log := newMemLog()
	log.add("q", msg("slow"))
	ex := &scriptedExecutor{gate: make(chan struct{}), pid: 4242}
	w := newTestWorker(t, log, ex, nil)
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	var have []TaskState
	waitFor(t, "slow in flight", func() bool {
		st := w.State()
		if len(st.Queues) == 1 {
			have = st.Queues[0].InFlight
		}
		return len(have) == 1
	})
	if have[0].ID != "slow" || have[0].PID != 4242 {
		t.Fatalf("want slow in flight with pid 4242, have %+v", have[0])
	}
	close(ex.gate)
}

func TestPoisonIsDeadLetteredAndLaterMessagesRun(t *testing.T) {
	log := newMemLog()
	log.addPoison("q", "p", []byte("{not json"))
	log.add("q", msg("after"))
	ex := &scriptedExecutor{}
	w := newTestWorker(t, log, ex, nil)
	claim := &memClaim{}
	if err := w.Start(queueConfig("q", nil), claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "offset past both", func() bool { return claim.committed() == 2 })
	if log.deadCount("q") != 1 {
		t.Fatalf("want the poison message dead-lettered")
	}
	log.mu.Lock()
	dl := log.dead["q"][0]
	log.mu.Unlock()
	if string(dl.Raw) != "{not json" {
		t.Fatalf("dead letter keeps the raw envelope: want {not json, have %q", dl.Raw)
	}
	if runs := ex.runList(); !slices.Equal(runs, []string{"after#0"}) {
		t.Fatalf("runs: want [after#0], have %v", runs)
	}
}

func TestStopDrainsKillsStragglersAndReleasesFinalOffset(t *testing.T) {
	log := newMemLog()
	for i := 0; i < 3; i++ {
		log.add("q", msg(fmt.Sprintf("m%d", i)))
	}
	ex := &scriptedExecutor{gate: make(chan struct{})}
	w := newTestWorker(t, log, ex, func(c *Config) { c.DrainTimeout = 50 * time.Millisecond })
	claim := &memClaim{}
	if err := w.Start(queueConfig("q", func(q *drover.QueueConfig) { q.Concurrency = 3 }), claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three running", func() bool { ex.mu.Lock(); defer ex.mu.Unlock(); return ex.running == 3 })
	ex.gate <- struct{}{} // exactly one finishes
	if err := w.Stop(context.Background(), "q", drover.StopLeave); err != nil {
		t.Fatal(err)
	}
	claim.mu.Lock()
	rel := claim.released
	claim.mu.Unlock()
	if rel == nil {
		t.Fatal("want the claim released")
	}
	// Which one finished is up to the scheduler; the offset covers only a
	// contiguous done prefix, so it is 0 or 1, never past an unfinished one.
	if rel.Position > 1 {
		t.Fatalf("released offset %d passes unfinished messages", rel.Position)
	}
	if len(w.Owned()) != 0 {
		t.Fatalf("after Stop: want no owned queue, have %v", w.Owned())
	}
}

func TestAbortWritesNothing(t *testing.T) {
	log := newMemLog()
	log.add("q", msg("a"))
	ex := &scriptedExecutor{gate: make(chan struct{})}
	w := newTestWorker(t, log, ex, nil)
	claim := &memClaim{}
	if err := w.Start(queueConfig("q", nil), claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a running", func() bool { ex.mu.Lock(); defer ex.mu.Unlock(); return ex.running == 1 })
	w.Abort("q")
	claim.mu.Lock()
	defer claim.mu.Unlock()
	if claim.released != nil || len(claim.commits) != 0 {
		t.Fatalf("abort: want no commit or release, have commits %v released %v", claim.commits, claim.released)
	}
}

func TestPoolGrantsFreedSlotsByWeight(t *testing.T) {
	p := newPool(2)
	heavy := &poolWaiter{queue: "heavy", weight: 3, wake: func() {}}
	light := &poolWaiter{queue: "light", weight: 1, wake: func() {}}
	if !p.tryAcquire(light) || !p.tryAcquire(light) {
		t.Fatal("want two free slots")
	}
	if p.tryAcquire(heavy) || p.tryAcquire(light) {
		t.Fatal("want no third slot")
	}
	p.release("light") // light runs 1 (weight 1), heavy runs 0 (weight 3): heavy is owed
	if !p.tryAcquire(heavy) {
		t.Fatal("want the freed slot granted to the heavier, idle queue")
	}
	if p.tryAcquire(light) {
		t.Fatal("light must still wait")
	}
	p.leave(light)
	if p.inUse() != 2 {
		t.Fatalf("in use: want 2, have %d", p.inUse())
	}
}

// verifyingClaim is a memClaim whose Verify reports it fenced once set.
type verifyingClaim struct {
	memClaim
	reset   atomic.Bool
	verifys atomic.Int32
}

func (c *verifyingClaim) Verify(context.Context) error {
	c.verifys.Add(1)
	if c.reset.Load() {
		return fmt.Errorf("verify: %w", drover.ErrFenced)
	}
	return nil
}

func TestResumeVerifiesTheClaimAndDropsAResetQueue(t *testing.T) {
	log := newMemLog()
	w := newTestWorker(t, log, &scriptedExecutor{}, nil)
	w.SetPause(PauseState{Queues: map[string]bool{"q": true}})
	claim := &verifyingClaim{}
	if err := w.Start(queueConfig("q", nil), claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the queue checked while paused", func() bool { return w.idle.checkCount() > 0 })
	claim.reset.Store(true) // an operator resets the offset while paused
	w.SetPause(PauseState{})
	log.add("q", msg("after-reset"))
	w.Wake("q") // the queue runs again (parked, it waits for work)
	waitFor(t, "the queue to be dropped as fenced", func() bool { return loopEnded(w, "q") })
	if claim.verifys.Load() == 0 {
		t.Fatal("want the claim verified on resume")
	}
	claim.mu.Lock()
	defer claim.mu.Unlock()
	if len(claim.commits) != 0 || claim.released != nil {
		t.Fatalf("a fenced queue must write nothing: commits %v released %v", claim.commits, claim.released)
	}
}

// After a freeze (the heartbeat went stale: SIGSTOP, a VM pause) no task
// starts until Confirm proves the session with a fresh round trip.
func TestFrozenWorkerStartsNothingUntilTheSessionIsConfirmed(t *testing.T) {
	log := newMemLog()
	ex := &scriptedExecutor{}
	confirmed := make(chan struct{})
	var asked atomic.Int32
	clock := testkit.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	w := newTestWorker(t, log, ex, func(c *Config) {
		c.Clock = clock
		c.Confirm = func(ctx context.Context) error {
			asked.Add(1)
			select {
			case <-confirmed:
				return nil
			default:
				return fmt.Errorf("not yet")
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)
	waitFor(t, "the heartbeat to wait for its beat", func() bool { return clock.Timers() == 1 })
	claim := &memClaim{}
	if err := w.Start(queueConfig("q", nil), claim); err != nil {
		t.Fatal(err)
	}
	// As after SIGCONT: two seconds pass without a beat.
	clock.Advance(2 * time.Second)
	waitFor(t, "the guard to ask for confirmation", func() bool { return asked.Load() > 0 })
	log.add("q", msg("after-freeze"))
	w.Wake("q")
	// Two whole loop iterations after wakes start nothing.
	for i := 0; i < 2; i++ {
		p := w.iterationCount.Load()
		clock.Advance(10 * time.Millisecond)
		w.Wake("q")
		waitFor(t, "a loop iteration", func() bool { return w.iterationCount.Load() > p })
	}
	if runs := ex.runList(); len(runs) != 0 {
		t.Fatalf("frozen: want no task started before the session is confirmed, have %v", runs)
	}
	close(confirmed)
	waitFor(t, "the task to run once confirmed", func() bool {
		clock.Advance(freezeBeat) // the guard asks again; the loop commits
		return claim.committed() == 1
	})
}

// loopEnded reports whether q's loop has returned: from then on nothing of
// q runs, commits or trims.
func loopEnded(w *Worker, q string) bool {
	w.mu.Lock()
	l := w.queues[q]
	w.mu.Unlock()
	if l == nil {
		return true
	}
	select {
	case <-l.doneCh():
		return true
	default:
		return false
	}
}
