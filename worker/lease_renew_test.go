package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/worker/executor"
)

// confirmAfter returns a Config.Confirm that fails until confirmed is
// closed, counting the calls in asked.
func confirmAfter(confirmed <-chan struct{}, asked *atomic.Int32) func(context.Context) error {
	return func(ctx context.Context) error {
		asked.Add(1)
		select {
		case <-confirmed:
			return nil
		default:
			return fmt.Errorf("not yet")
		}
	}
}

// The freeze guard renews the task lease while the worker beats, stops as
// soon as it notices a freeze, and renews again only once the session is
// confirmed: a thawed zombie must not keep its tasks alive.
func TestRunRenewsTheLeaseOnlyWhileTheSessionIsConfirmed(t *testing.T) {
	var renewals, asked atomic.Int32
	confirmed := make(chan struct{})
	clock := testkit.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	w := newTestWorker(t, newMemLog(), &scriptedExecutor{}, func(c *Config) {
		c.Clock = clock
		c.Renew = func() { renewals.Add(1) }
		c.Confirm = confirmAfter(confirmed, &asked)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)
	waitFor(t, "the heartbeat to wait for its beat", func() bool { return clock.Timers() == 1 })
	n := renewals.Load()
	clock.Advance(freezeBeat)
	waitFor(t, "a renewal on a beat", func() bool { return renewals.Load() > n })

	// As after SIGCONT: two seconds pass without a beat.
	waitFor(t, "the next beat's timer", func() bool { return clock.Timers() == 1 })
	clock.Advance(2 * time.Second)
	waitFor(t, "the guard to ask for confirmation", func() bool { return asked.Load() > 0 })
	held := renewals.Load()
	for i := int32(2); i <= 4; i++ {
		waitFor(t, "the guard's retry timer", func() bool { return clock.Timers() == 1 })
		clock.Advance(freezeBeat)
		waitFor(t, "the guard to ask again", func() bool { return asked.Load() >= i })
	}
	if have := renewals.Load(); have != held {
		t.Fatalf("frozen, session not confirmed: want no renewal, have %d", have-held)
	}
	close(confirmed)
	waitFor(t, "the guard's retry timer", func() bool { return clock.Timers() == 1 })
	clock.Advance(freezeBeat)
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
			clock := testkit.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			w := newTestWorker(t, log, ex, func(c *Config) {
				c.Clock = clock
				c.Confirm = confirmAfter(confirmed, &asked)
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go w.Run(ctx)
			waitFor(t, "the heartbeat to wait for its beat", func() bool { return clock.Timers() >= 1 })
			log.add("q", msg("m1"))
			if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the task to start", func() bool { return len(ex.runList()) == 1 })

			// Frozen (as after SIGCONT), and the task dies meanwhile.
			clock.Advance(2 * time.Second)
			waitFor(t, "the guard to ask for confirmation", func() bool { return asked.Load() > 0 })
			ex.gate <- struct{}{}
			// The guard retries on its timer (the queue loop's timers share
			// the fake clock, so advance until it has asked again).
			for i := int32(2); i <= 4; i++ {
				waitFor(t, "the guard to ask again", func() bool { clock.Advance(freezeBeat); return asked.Load() >= i })
			}
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
			waitFor(t, "the retry once confirmed", func() bool { clock.Advance(freezeBeat); return log.retryCount() == 1 })
		})
	}
}

// retryCount returns how many retries were written.
func (l *memLog) retryCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.retries
}
