package worker

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// frozenRouter is a memLog whose RouteWakeups blocks until thawed (Redis
// frozen), then records the queues routed.
type frozenRouter struct {
	*memLog
	thaw   chan struct{}
	mu     sync.Mutex
	routed []string
	calls  int
}

func (r *frozenRouter) RouteWakeups(ctx context.Context, _ string, queues ...string) error {
	select {
	case <-r.thaw:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	r.routed = append(r.routed, queues...)
	return nil
}

// Starting a queue never waits on Redis: with the route writes frozen,
// Start returns, and a Stop of another queue (the next thing the
// reconciler does) completes; once Redis answers, every queue started
// meanwhile is routed, in one batch.
func TestStartDoesNotWaitForAFrozenRouter(t *testing.T) {
	rt := &frozenRouter{memLog: newMemLog(), thaw: make(chan struct{})}
	w := newTestWorker(t, rt.memLog, &scriptedExecutor{}, func(c *Config) { c.Store = rt })
	t.Cleanup(func() { w.routes.wait() })
	t.Cleanup(func() {
		select {
		case <-rt.thaw:
		default:
			close(rt.thaw)
		}
	})
	started := make(chan struct{})
	go func() {
		defer close(started)
		for _, q := range []string{"a", "b", "c"} {
			if err := w.Start(queueConfig(q, nil), &memClaim{}); err != nil {
				t.Error(err)
			}
		}
		if err := w.Stop(context.Background(), "a", drover.StopLeave); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-started:
	case <-time.After(testkit.Bound):
		t.Fatal("Start or Stop waited for the frozen route writes")
	}
	if got := w.Owned(); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("want b and c running, have %v", got)
	}
	close(rt.thaw)
	w.routes.wait()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	// The first call took a, and maybe more; a was stopped before or while
	// it waited. Every queue still running was routed.
	for _, q := range []string{"b", "c"} {
		if !slices.Contains(rt.routed, q) {
			t.Fatalf("want %s routed once Redis answers, have %v", q, rt.routed)
		}
	}
}
