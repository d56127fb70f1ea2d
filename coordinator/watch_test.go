package coordinator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testenv"
)

// patient gives a session that makes big requests on a busy machine a long
// session and request timeout (a starved test process must not lose it).
func patient(c *Config) { c.SessionTimeout, c.RequestTimeout = 20*time.Second, 30*time.Second }

// ctxLong is ctxT for the tests that move tens of thousands of nodes: on a
// busy machine they take minutes.
func ctxLong(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// untilCtx receives from ch until ok(v) or ctx ends.
func untilCtx[T any](ctx context.Context, t *testing.T, ch <-chan T, what string, ok func(T) bool) T {
	t.Helper()
	for {
		select {
		case v, open := <-ch:
			if !open {
				t.Fatalf("%s: watch channel closed", what)
			}
			if ok(v) {
				return v
			}
		case <-ctx.Done():
			t.Fatalf("%s: not delivered: %v", what, ctx.Err())
		}
	}
}

// createQueues registers n queues named q0000000… with CreateQueues.
func createQueues(t *testing.T, s *Session, n int) []string {
	t.Helper()
	names := make([]string, n)
	cfgs := make([]drover.QueueConfig, n)
	for i := range names {
		names[i] = fmt.Sprintf("q%07d", i)
		cfgs[i] = drover.QueueConfig{Name: names[i]}
	}
	created, err := s.CreateQueues(ctxLong(t), cfgs)
	if err != nil || created != n {
		t.Fatalf("create %d queues: created %d (%v)", n, created, err)
	}
	return names
}

// A watcher of more nodes than one select can wait on (reflect.Select allows
// 65,536 cases): the registry watch of a 70,000-queue fleet must deliver the
// list and then a change, where it used to panic with "too many cases".
func TestWatchQueuesBeyondTheSelectLimit(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin := connect(t, server.Addrs, root, patient), connect(t, server.Addrs, root, patient)
	const n = 70_000
	names := createQueues(t, admin, n)
	ctx := ctxLong(t)
	watch := s.WatchQueues(ctx)
	untilCtx(ctx, t, watch, "all queues", func(qs []QueueEntry) bool { return len(qs) == n })
	if have := s.hub.paths(); have < n {
		t.Fatalf("watched paths: want at least %d, have %d", n, have)
	}
	last := names[n-1]
	if _, err := admin.UpdateQueue(ctx, drover.QueueConfig{Name: last, Weight: 7}, -1); err != nil {
		t.Fatalf("update %s: %v", last, err)
	}
	untilCtx(ctx, t, watch, "the change of one queue", func(qs []QueueEntry) bool {
		for _, q := range qs {
			if q.Name == last {
				return q.Config.Weight == 7
			}
		}
		return false
	})
}
