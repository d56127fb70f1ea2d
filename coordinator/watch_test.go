package coordinator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drover-dev/drover"
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
	created, err := s.Queues().CreateMany(ctxLong(t), cfgs)
	if err != nil || created != n {
		t.Fatalf("create %d queues: created %d (%v)", n, created, err)
	}
	return names
}
