package worker

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/worker/executor"
)

// memPauser records the pause flags a worker writes.
type memPauser struct {
	mu     sync.Mutex
	pauses []drover.Pause
}

func (p *memPauser) SetPause(_ context.Context, scope drover.PauseScope, name string, f drover.Pause) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if scope != drover.PauseQueue || name == "" {
		return nil
	}
	p.pauses = append(p.pauses, f)
	return nil
}

func (p *memPauser) list() []drover.Pause {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.pauses)
}

// failing fails every attempt of the ids in bad (changeable under mu).
type failing struct {
	mu  sync.Mutex
	bad map[string]bool
}

func (f *failing) outcome(m *drover.Message) executor.Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bad[m.ID] {
		return executor.OutcomeFailure
	}
	return executor.OutcomeSuccess
}

func (f *failing) heal(id string) { f.mu.Lock(); delete(f.bad, id); f.mu.Unlock() }

// parkingQueue starts an ordered queue with on_failure park holding a, b
// and c, where a fails every attempt; it waits for the park.
func parkingQueue(t *testing.T) (*Worker, *memLog, *scriptedExecutor, *memPauser, *failing, *memClaim) {
	t.Helper()
	log := newMemLog()
	for _, id := range []string{"a", "b", "c"} {
		log.add("q", msg(id))
	}
	f := &failing{bad: map[string]bool{"a": true}}
	ex := &scriptedExecutor{outcome: f.outcome}
	pz := &memPauser{}
	w := newTestWorker(t, log, ex, func(c *Config) { c.Pauser = pz })
	claim := &memClaim{}
	qc := queueConfig("q", func(qc *drover.QueueConfig) {
		qc.Ordered, qc.Concurrency, qc.MaxAttempts, qc.OnFailure = true, 0, 2, drover.OnFailurePark
	})
	if err := w.Start(qc, claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the queue to park itself", func() bool { return len(pz.list()) == 1 })
	allParked(t, w)
	return w, log, ex, pz, f, claim
}

// The head that used its attempts pauses the queue with itself as the
// reason; nothing behind it runs — not even before the worker sees its
// own pause flag — and nothing is dead-lettered or committed past it.
func TestParkOnFailurePausesAtTheHeadAndRunsNothingBehindIt(t *testing.T) {
	w, log, ex, pz, _, claim := parkingQueue(t)
	p := pz.list()[0]
	if p.Head == nil || p.Head.ID != "a" || p.Head.Attempts != 2 || p.Head.Error == "" {
		t.Fatalf("pause: want head a after 2 attempts with its error, have %+v (head %+v)", p, p.Head)
	}
	if want, have := []string{"a#0", "a#1"}, ex.runList(); !slices.Equal(want, have) {
		t.Fatalf("runs before the pause is seen: want %v, have %v", want, have)
	}
	if n := log.deadCount("q"); n != 0 {
		t.Fatalf("dead letters: want 0 (parked), have %d", n)
	}
	w.SetPause(PauseState{Queues: map[string]bool{"q": true}}) // the watch delivers the flag
	allParked(t, w)
	if want, have := []string{"a#0", "a#1"}, ex.runList(); !slices.Equal(want, have) {
		t.Fatalf("runs while paused: want %v, have %v", want, have)
	}
	if c := claim.committed(); c != 0 {
		t.Fatalf("committed: want 0 (before the head), have %d", c)
	}
}

// Resumed after a fix, the head runs again with fresh attempts, then the
// rest, in order.
func TestParkedHeadRetriedOnResumeThenTheRestInOrder(t *testing.T) {
	w, _, ex, _, f, _ := parkingQueue(t)
	w.SetPause(PauseState{Queues: map[string]bool{"q": true}})
	f.heal("a")
	w.SetPause(PauseState{})
	waitFor(t, "a, b and c to run", func() bool { return len(ex.runList()) == 5 })
	if want, have := []string{"a#0", "a#1", "a#0", "b#0", "c#0"}, ex.runList(); !slices.Equal(want, have) {
		t.Fatalf("runs: want %v, have %v", want, have)
	}
}

// Moved to the dead letters by an operator (removed from the log) while
// parked, the head is not run again: the next message is the new head.
func TestParkedHeadSkippedRunsTheNextMessage(t *testing.T) {
	w, log, ex, _, _, _ := parkingQueue(t)
	w.SetPause(PauseState{Queues: map[string]bool{"q": true}})
	log.mu.Lock()
	log.log["q"] = log.log["q"][1:] // what queue.Dead.Kill does to the log
	log.mu.Unlock()
	w.SetPause(PauseState{})
	waitFor(t, "b and c to run", func() bool { return len(ex.runList()) == 4 })
	if want, have := []string{"a#0", "a#1", "b#0", "c#0"}, ex.runList(); !slices.Equal(want, have) {
		t.Fatalf("runs: want %v, have %v", want, have)
	}
}

// Without on_failure park, an ordered queue dead-letters the head and goes
// on (today's behaviour, kept).
func TestOrderedQueueWithoutParkDeadLettersTheHead(t *testing.T) {
	log := newMemLog()
	for _, id := range []string{"a", "b"} {
		log.add("q", msg(id))
	}
	f := &failing{bad: map[string]bool{"a": true}}
	ex := &scriptedExecutor{outcome: f.outcome}
	pz := &memPauser{}
	w := newTestWorker(t, log, ex, func(c *Config) { c.Pauser = pz })
	qc := queueConfig("q", func(qc *drover.QueueConfig) { qc.Ordered, qc.Concurrency, qc.MaxAttempts = true, 0, 2 })
	if err := w.Start(qc, &memClaim{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b to run", func() bool { return slices.Contains(ex.runList(), "b#0") })
	if n := log.deadCount("q"); n != 1 || len(pz.list()) != 0 {
		t.Fatalf("want a dead-lettered and no pause, have %d dead letters and pauses %v", n, pz.list())
	}
}

func TestOnFailureValidation(t *testing.T) {
	for _, mod := range []func(*drover.QueueConfig){
		func(qc *drover.QueueConfig) { qc.OnFailure = "retry" },
		func(qc *drover.QueueConfig) { qc.OnFailure = drover.OnFailurePark }, // not ordered
	} {
		if err := queueConfig("q", mod).Validate(); err == nil {
			t.Errorf("want an error naming on_failure, have none")
		}
	}
}
