package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/worker"
	"github.com/drover-dev/drover/worker/executor"
)

// A wake-up lost entirely, on real Redis: the queue's :owner route names
// another member's channel (a stale route), so the enqueue wakes that member
// and not the owner. The owner's parked queue runs the message anyway,
// found by the amortised backstop check.
func TestLostWakeupRunsThroughTheBackstopCheck(t *testing.T) {
	srv := testenv.Redis(t)
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	store, err := queue.New(queue.Config{Client: rdb, Prefix: testenv.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	ex := &recordingExecutor{}
	routed := &signalRouter{Store: store.Log(), done: make(chan struct{})}
	w, err := worker.New(worker.Config{
		Member: "owner", Store: routed, Executor: ex,
		PollInterval: 200 * time.Millisecond, CommitInterval: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.AbortAll)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); w.FollowWakeups(ctx, store.Listener()) }()
	defer func() { cancel(); <-done }()
	stale, err := store.Listener().Wakeups(ctx, "stale")
	if err != nil {
		t.Fatal(err)
	}

	claim := &offsetClaim{}
	qc := drover.QueueConfig{Name: "lonely", Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}
	if err := w.Start(qc, claim); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the queue parked", func() bool {
		st := w.State()
		return len(st.Queues) == 1 && st.Queues[0].Parked
	})
	// The worker routes the queue's wake-ups on its own goroutine, maybe
	// after the queue parked: the stale route must come after that write.
	select {
	case <-routed.done:
	case <-time.After(testkit.Bound):
		t.Fatal("the worker never routed the queue's wake-ups")
	}
	if err := store.Log().RouteWakeups(ctx, "stale", "lonely"); err != nil { // the route goes stale
		t.Fatal(err)
	}
	res, err := store.Producer().Enqueue(ctx, &drover.Message{Queue: "lonely", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case wk := <-stale:
		if wk.Queue != "lonely" {
			t.Fatalf("stale member's wake-up: want lonely, have %+v", wk)
		}
	case <-time.After(testkit.Bound):
		t.Fatal("the enqueue's wake-up did not go to the stale route")
	}
	testkit.Eventually(t, "the message run and committed", func() bool {
		return claim.committed() == res.Position
	})
	if ids := ex.ids(); len(ids) != 1 || ids[0] != res.ID {
		t.Fatalf("runs: want [%s], have %v", res.ID, ids)
	}
}

// signalRouter is a worker store that closes done after its first
// successful RouteWakeups.
type signalRouter struct {
	worker.Store
	once sync.Once
	done chan struct{}
}

func (r *signalRouter) RouteWakeups(ctx context.Context, member string, queues ...string) error {
	err := r.Store.RouteWakeups(ctx, member, queues...)
	if err == nil {
		r.once.Do(func() { close(r.done) })
	}
	return err
}

// recordingExecutor succeeds at once and records the message ids.
type recordingExecutor struct {
	mu  sync.Mutex
	ran []string
}

func (e *recordingExecutor) Execute(_ context.Context, t *executor.Task) executor.Result {
	e.mu.Lock()
	e.ran = append(e.ran, t.Message.ID)
	e.mu.Unlock()
	return executor.Result{Outcome: executor.OutcomeSuccess}
}

func (e *recordingExecutor) ids() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.ran...)
}

// offsetClaim is a claim that holds forever and keeps the committed offset.
type offsetClaim struct {
	mu  sync.Mutex
	off drover.Offset
}

func (c *offsetClaim) Offset() drover.Offset { c.mu.Lock(); defer c.mu.Unlock(); return c.off }
func (c *offsetClaim) Commit(_ context.Context, off drover.Offset) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off = off
	return nil
}
func (c *offsetClaim) Release(ctx context.Context, off drover.Offset) error {
	return c.Commit(ctx, off)
}
func (c *offsetClaim) Done() <-chan struct{}      { return nil }
func (c *offsetClaim) Err() error                 { return nil }
func (c *offsetClaim) committed() drover.Position { return c.Offset().Position }
