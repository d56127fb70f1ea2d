package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/worker/executor"
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

// A task that failed while the worker was frozen (its lease killed it)
// writes nothing until the session is confirmed, and nothing at all when
// the session turns out lost: the queue belongs to another member by then.
func TestTaskEndedDuringAFreezeWritesNothingUntilConfirmed(t *testing.T) {
	for _, lost := range []bool{true, false} {
		t.Run(fmt.Sprintf("lost=%v", lost), func(t *testing.T) {
			log := newMemLog()
			ex := &scriptedExecutor{gate: make(chan struct{}), outcome: func(*drover.Message) executor.Outcome { return executor.OutcomeFailure }}
			var asked atomic.Int32
			confirmed := make(chan struct{})
			w := newTestWorker(t, log, ex, func(c *Config) {
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
			waitFor(t, "the heartbeat to run", func() bool { return w.beating.Load() })
			log.add("q", msg("m1"))
			if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the task to start", func() bool { return len(ex.runList()) == 1 })

			// Frozen (as after SIGCONT), and the task dies meanwhile.
			w.lastBeat.Store(int64(time.Since(w.epoch) - 2*time.Second))
			waitFor(t, "the guard to ask for confirmation", func() bool { return asked.Load() > 0 })
			ex.gate <- struct{}{}
			n := asked.Load()
			waitFor(t, "the guard to ask again", func() bool { return asked.Load() > n+2 })
			if r := log.retryCount(); r != 0 {
				t.Fatalf("frozen, session not confirmed: want no retry written, have %d", r)
			}
			if lost {
				w.Abort("q")
				if r, runs := log.retryCount(), ex.runList(); r != 0 || len(runs) != 1 {
					t.Fatalf("session lost: want no retry and no new attempt, have %d retries and runs %v", r, runs)
				}
				return
			}
			close(confirmed)
			waitFor(t, "the retry once confirmed", func() bool { return log.retryCount() == 1 })
		})
	}
}

// retryCount returns how many retries were written.
func (l *memLog) retryCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.retries
}
