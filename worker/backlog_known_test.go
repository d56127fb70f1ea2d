package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/worker/executor"
)

// busyKey is one queue on real Redis whose owner runs on a fake clock: each
// round a message is enqueued and woken, runs, and the queue parks caught
// up (what a busy key does after every message).
type busyKey struct {
	t     *testing.T
	r     redisStore
	w     *Worker
	ex    *scriptedExecutor
	clock *testkit.Clock
	rec   *gaugeRecorder
	n     int
}

// newBusyKey starts queue q (its config changed by mod) on a worker whose
// failing messages are those with args "bad".
func newBusyKey(t *testing.T, mod func(*drover.QueueConfig)) *busyKey {
	r := newRedisStore(t, testenv.Redis(t).Addr)
	k := &busyKey{t: t, r: r, clock: testkit.NewClock(t0)}
	k.rec = &gaugeRecorder{Recorder: metrics.Discard, last: map[string]float32{}, sets: map[string]int{}}
	k.ex = &scriptedExecutor{outcome: func(m *drover.Message) executor.Outcome {
		if string(m.Args) == `"bad"` {
			return executor.OutcomeFailure
		}
		return executor.OutcomeSuccess
	}}
	k.w = redisWorker(t, "a", r, k.ex, func(c *Config) {
		c.Clock, c.Metrics = k.clock, k.rec
		c.CommitInterval, c.PromoteInterval, c.PollInterval = DefaultCommitInterval, DefaultPromoteInterval, DefaultPollInterval
	})
	if err := k.w.Start(queueConfig("q", mod), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	allParked(t, k.w)
	// Off the worker's epoch: a loop's times are never zero (loopTime),
	// so the claim's time is a nanosecond past it.
	k.clock.Advance(time.Millisecond)
	return k
}

// round moves the clock by d, runs one message with args and waits until
// the queue parked and its backlog read, if it asked one, was set.
func (k *busyKey) round(d time.Duration, args string) {
	k.t.Helper()
	k.clock.Advance(d)
	k.r.enqueue(k.t, "q", args)
	k.n++
	k.w.Wake("q")
	waitFor(k.t, fmt.Sprintf("message %d to run", k.n), func() bool { return len(k.ex.runList()) >= k.n })
	k.settle()
}

// settle waits until the queue is parked and the backlogger idle.
func (k *busyKey) settle() {
	k.t.Helper()
	allParked(k.t, k.w)
	waitFor(k.t, "the backlog reads asked to be set", func() bool { return len(pendingBacklogs(k.w)) == 0 })
}

// reads returns the backlog reads sent so far.
func (k *busyKey) reads() int {
	_, reads, _ := k.w.backlogs.stats()
	return reads
}

// A busy key parks caught up after every message. Its first park a
// BacklogInterval after the claim reads its backlog (nothing delayed, no
// dead letter); later parks send no read until BacklogRefresh has passed
// since it, then one. Before, every park a BacklogInterval after the last
// read sent one: at 10,000 busy keys, 2,000 reads a second that said 0.
func TestACaughtUpQueueReadsItsEmptyCountsOncePerRefresh(t *testing.T) {
	k := newBusyKey(t, nil)
	k.round(DefaultBacklogInterval, `"ok"`)
	if n := k.reads(); n != 1 {
		t.Fatalf("first park a BacklogInterval after the claim: want 1 backlog read, have %d", n)
	}
	refresh := backlogRefreshIntervals * DefaultBacklogInterval
	for since := DefaultBacklogInterval; since < refresh; since += DefaultBacklogInterval {
		k.round(DefaultBacklogInterval, `"ok"`)
		if n := k.reads(); n != 1 {
			t.Fatalf("%s after the read, counts 0 and nothing moved: want still 1 backlog read, have %d", since, n)
		}
	}
	k.round(DefaultBacklogInterval, `"ok"`) // BacklogRefresh after the read
	if n := k.reads(); n != 2 {
		t.Fatalf("BacklogRefresh after the read: want a second backlog read, have %d reads", n)
	}
	if _, _, skipped := k.w.backlogs.stats(); skipped < backlogRefreshIntervals-1 {
		t.Fatalf("%d parks a BacklogInterval or more after the read skipped it: want at least that many counted skipped, have %d", backlogRefreshIntervals-1, skipped)
	}
}

// What the owner sees change its delayed or dead count (a retry to the
// delayed set, a dead letter) makes its next park a BacklogInterval after
// the last read read the counts, and the gauges say the new count.
func TestARetryOrDeadLetterMakesTheNextParkReadTheCounts(t *testing.T) {
	for _, c := range []struct {
		name  string
		mod   func(*drover.QueueConfig)
		gauge string
	}{
		{"retry", func(qc *drover.QueueConfig) {
			qc.Backoff = drover.Backoff{Base: drover.Duration(time.Hour), Max: drover.Duration(time.Hour)}
		}, metrics.Delayed},
		{"dead letter", func(qc *drover.QueueConfig) { qc.MaxAttempts = 1 }, metrics.Dead},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := newBusyKey(t, c.mod)
			k.round(DefaultBacklogInterval, `"ok"`)
			k.round(DefaultBacklogInterval, `"ok"`)
			if n := k.reads(); n != 1 {
				t.Fatalf("counts 0 and nothing moved: want 1 backlog read, have %d", n)
			}
			k.round(DefaultBacklogInterval, `"bad"`)
			if n := k.reads(); n != 2 {
				t.Fatalf("after a %s: want the park to read the counts (2 reads), have %d", c.name, n)
			}
			if v, _ := k.rec.gauge(c.gauge); v != 1 {
				t.Fatalf("after a %s: want %s 1, have %v", c.name, c.gauge, v)
			}
			// With a count above 0 the queue reads every BacklogInterval,
			// as before.
			k.round(DefaultBacklogInterval, `"ok"`)
			if n := k.reads(); n != 3 {
				t.Fatalf("%s 1: want a read every BacklogInterval (3 reads), have %d", c.gauge, n)
			}
		})
	}
}

// A wake-up that carries a due time (a delayed message enqueued) makes the
// next park read the counts: the delayed gauge says the message.
func TestAWakeupWithADueTimeMakesTheNextParkRead(t *testing.T) {
	k := newBusyKey(t, nil)
	k.round(DefaultBacklogInterval, `"ok"`)
	k.round(DefaultBacklogInterval, `"ok"`)
	if n := k.reads(); n != 1 {
		t.Fatalf("counts 0 and nothing moved: want 1 backlog read, have %d", n)
	}
	k.clock.Advance(DefaultBacklogInterval)
	due := k.clock.Now().Add(time.Hour)
	if _, err := k.r.store.Producer().EnqueueAt(context.Background(), &drover.Message{Queue: "q", Task: "t", Args: []byte(`"later"`)}, due); err != nil {
		t.Fatal(err)
	}
	k.w.WakeAt("q", due) // as FollowWakeups does for a wake-up with Due
	k.settle()
	if n := k.reads(); n != 2 {
		t.Fatalf("after a wake-up with a due time: want the park to read the counts (2 reads), have %d", n)
	}
	if v, _ := k.rec.gauge(metrics.Delayed); v != 1 {
		t.Fatalf("after a delayed enqueue: want %s 1, have %v", metrics.Delayed, v)
	}
}

// Without reads the gauges are set again from what the queue knows, once
// per BacklogInterval, so that the expiring gauges (2 minutes' retention)
// never lapse; a second park in the same interval sets nothing (setting
// them on every park cost 5% of a busy worker's CPU).
func TestASkippedReadSetsTheGaugesOncePerInterval(t *testing.T) {
	k := newBusyKey(t, nil)
	k.round(DefaultBacklogInterval, `"ok"`)
	// The delayed and dead gauges only: the lag gauges are also set to 0
	// by a park that follows a read which saw the message running (lag
	// 1), and whether that read answered before or after the park is up
	// to the scheduler. Their values are checked below.
	gauges := []string{metrics.Dead, metrics.Delayed}
	first := map[string]int{}
	for _, g := range gauges {
		if _, first[g] = k.rec.gauge(g); first[g] == 0 {
			t.Fatalf("after the first read: want %s set", g)
		}
	}
	half := DefaultBacklogInterval / 2
	for i := 1; i <= 5; i++ {
		// Three parks per interval: half way, again at once, and as the
		// next interval since the read begins.
		k.round(half, `"ok"`)
		k.round(0, `"ok"`)
		k.round(half, `"ok"`)
		for _, g := range gauges {
			if v, sets := k.rec.gauge(g); v != 0 || sets != first[g]+i {
				t.Fatalf("%d intervals after the read, parked three times in each: want %s 0 set %d times, have %v set %d times", i, g, first[g]+i, v, sets)
			}
		}
		for _, g := range []string{metrics.Lag, metrics.OldestAge} {
			if v, sets := k.rec.gauge(g); v != 0 || sets == 0 {
				t.Fatalf("%d intervals after the read: want %s 0, have %v (set %d times)", i, g, v, sets)
			}
		}
	}
	if n := k.reads(); n != 1 {
		t.Fatalf("want no read after the first, have %d reads", n)
	}
}

// BacklogRefresh defaults to 12 BacklogIntervals of the configured one; a
// refresh shorter than the interval, or negative, is refused by name.
func TestBacklogRefreshDefaultsAndValidation(t *testing.T) {
	base := Config{Store: newMemLog(), Executor: &scriptedExecutor{}}
	c := base
	c.BacklogInterval = 2 * time.Second
	have, err := c.withDefaults()
	if err != nil || have.BacklogRefresh != 24*time.Second {
		t.Fatalf("BacklogInterval 2s: want BacklogRefresh 24s, have %s (%v)", have.BacklogRefresh, err)
	}
	for _, refresh := range []time.Duration{-time.Second, time.Second} {
		c := base
		c.BacklogRefresh = refresh
		_, err := c.withDefaults()
		if !errors.Is(err, drover.ErrInvalidConfig) || !strings.Contains(err.Error(), "BacklogRefresh") {
			t.Fatalf("BacklogRefresh %s: want an invalid config error naming BacklogRefresh, have %v", refresh, err)
		}
	}
}
