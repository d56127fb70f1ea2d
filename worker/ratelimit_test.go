package worker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// rateLimited returns a worker on a fake clock with queue q holding n
// messages, limited to rl.
func rateLimited(t *testing.T, n int, rl drover.RateLimit) (*Worker, *scriptedExecutor, *testkit.Clock) {
	t.Helper()
	log := newMemLog()
	for i := range n {
		log.add("q", msg(fmt.Sprintf("m%03d", i)))
	}
	ex := &scriptedExecutor{}
	clock := testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	w := newTestWorker(t, log, ex, func(c *Config) { c.Clock = clock; c.BatchSize = 100 })
	if err := w.Start(queueConfig("q", func(qc *drover.QueueConfig) { qc.RateLimit = rl }), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	return w, ex, clock
}

// waitRuns waits until ex ran want messages and the queue is parked again,
// then checks that no more ran: a parked queue runs nothing before the
// clock moves.
func waitRuns(t *testing.T, w *Worker, ex *scriptedExecutor, want int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d messages run", want), func() bool { return len(ex.runList()) >= want })
	allParked(t, w)
	if have := len(ex.runList()); have != want {
		t.Fatalf("runs: want %d, have %d (%v)", want, have, ex.runList())
	}
}

func queueStateOf(t *testing.T, w *Worker, q string) QueueState {
	t.Helper()
	for _, qs := range w.State().Queues {
		if qs.Name == q {
			return qs
		}
	}
	t.Fatalf("queue %s not in the state", q)
	return QueueState{}
}

// A limited queue starts its burst at once, then one message per token,
// and keeps no more than its burst while it waits; it shows as rate-limited
// while it is held back.
func TestRateLimitStartsTheBurstThenOneMessagePerToken(t *testing.T) {
	w, ex, clock := rateLimited(t, 50, drover.RateLimit{PerSecond: 2, Burst: 3})
	waitRuns(t, w, ex, 3)
	if qs := queueStateOf(t, w, "q"); !qs.RateLimited {
		t.Fatalf("held back with a backlog: want rate_limited, have %+v", qs)
	}
	clock.Advance(499 * time.Millisecond) // not a whole token yet
	waitRuns(t, w, ex, 3)
	clock.Advance(time.Millisecond)
	waitRuns(t, w, ex, 4)
	clock.Advance(1500 * time.Millisecond) // three tokens
	waitRuns(t, w, ex, 7)
	clock.Advance(time.Minute) // the bucket keeps its burst, no more
	waitRuns(t, w, ex, 10)
}

// A limit changed while the queue waits for a token of the old limit
// applies at once: no wait for the old rate's token, no rebalance.
func TestRateLimitChangedLiveAppliesAtOnce(t *testing.T) {
	w, ex, clock := rateLimited(t, 50, drover.RateLimit{PerSecond: 1, Burst: 1})
	waitRuns(t, w, ex, 1)
	qc := queueConfig("q", func(qc *drover.QueueConfig) { qc.RateLimit = drover.RateLimit{PerSecond: 100, Burst: 1} })
	if err := w.Configure(qc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the queue to park again on the new limit", func() bool { return w.loopGoroutines.Load() == 0 })
	clock.Advance(10 * time.Millisecond) // a token at 100/s; at 1/s it takes a second
	waitRuns(t, w, ex, 2)
	for i := range 5 {
		clock.Advance(10 * time.Millisecond)
		waitRuns(t, w, ex, 3+i)
	}

	// The limit removed: the backlog runs without the clock moving.
	if err := w.Configure(queueConfig("q", nil)); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, w, ex, 50)
	if qs := queueStateOf(t, w, "q"); qs.RateLimited {
		t.Fatalf("no limit: want not rate_limited, have %+v", qs)
	}
}

func TestRateLimitValidation(t *testing.T) {
	for _, tc := range []struct {
		rl   drover.RateLimit
		want string
	}{
		{drover.RateLimit{PerSecond: -1}, "rate_limit.per_second"},
		{drover.RateLimit{PerSecond: 1, Burst: -1}, "rate_limit.burst"},
		{drover.RateLimit{Burst: 5}, "rate_limit.burst"},
	} {
		err := queueConfig("q", func(qc *drover.QueueConfig) { qc.RateLimit = tc.rl }).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: want an error naming %s, have %v", tc.rl, tc.want, err)
		}
	}
	if b := (drover.RateLimit{PerSecond: 1000}).BurstOrDefault(); b != 10 {
		t.Errorf("default burst at 1000/s: want 10, have %d", b)
	}
}
