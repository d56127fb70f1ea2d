package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// The freeze guard renews the task lease while the worker beats, stops as
// soon as it notices a freeze, and renews again only once the session is
// confirmed: a thawed zombie must not keep its tasks alive.
func TestRunRenewsTheLeaseOnlyWhileTheSessionIsConfirmed(t *testing.T) {
	var renewals, asked atomic.Int32
	confirmed := make(chan struct{})
	w := newTestWorker(t, newMemLog(), &scriptedExecutor{}, func(c *Config) {
		c.Renew = func() { renewals.Add(1) }
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
	waitFor(t, "a renewal while the worker beats", func() bool { return renewals.Load() > 0 })

	// As after SIGCONT: the last beat is two seconds old.
	w.lastBeat.Store(int64(time.Since(w.epoch) - 2*time.Second))
	waitFor(t, "the guard to ask for confirmation", func() bool { return asked.Load() > 0 })
	held := renewals.Load()
	waitFor(t, "the guard to ask again", func() bool { return asked.Load() > 3 })
	if n := renewals.Load(); n != held {
		t.Fatalf("frozen, session not confirmed: want no renewal, have %d", n-held)
	}
	close(confirmed)
	waitFor(t, "a renewal once confirmed", func() bool { return renewals.Load() > held })
}
