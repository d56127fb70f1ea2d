package worker

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/metrics"
)

// heldBacklogLog is a memLog that measures backlogs many at a time; a
// BacklogMany waits until release is closed, and a lone Backlog fails the
// test (the worker measures every backlog in BacklogMany, never one by one).
type heldBacklogLog struct {
	*memLog
	t       *testing.T
	release chan struct{}
	lag     int64

	mu    sync.Mutex
	calls int
	asked []string
}

func (l *heldBacklogLog) Backlog(context.Context, string, drover.Position) (Backlog, error) {
	l.t.Error("a lone Backlog read: want every backlog read in BacklogMany")
	return Backlog{}, nil
}

func (l *heldBacklogLog) BacklogMany(_ context.Context, queues []string, _ []drover.Position) ([]drover.Backlog, []error) {
	l.mu.Lock()
	l.calls++
	l.asked = append(l.asked, queues...)
	l.mu.Unlock()
	<-l.release
	out := make([]drover.Backlog, len(queues))
	for i := range out {
		out[i].Lag = l.lag
	}
	return out, make([]error, len(queues))
}

func (l *heldBacklogLog) counts() (calls, queues int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls, len(l.asked)
}

// A queue's backlog read does not hold up its work: while a BacklogMany is
// in flight (held here), the queues that asked for theirs still park and
// run their next messages; the queues that ask meanwhile are measured
// together in the next round trip, and the result reaches the gauges.
// Before the backlogger each loop read its own backlog before parking, and
// a slow read (a busy Redis client's connections all taken) delayed the
// queue's next message by as much.
func TestBacklogReadsDoNotHoldUpMessages(t *testing.T) {
	mem := newMemLog()
	log := &heldBacklogLog{memLog: mem, t: t, release: make(chan struct{}), lag: 7}
	rec := &gaugeRecorder{Recorder: metrics.Discard, last: map[string]float32{}, sets: map[string]int{}}
	ex := &scriptedExecutor{}
	clock := testkit.NewClock(t0)
	w := newTestWorker(t, mem, ex, func(c *Config) {
		c.Clock, c.Store, c.Metrics = clock, log, rec
		c.CommitInterval, c.PromoteInterval, c.PollInterval = DefaultCommitInterval, DefaultPromoteInterval, DefaultPollInterval
	})
	queues := []string{"a", "b", "c"}
	for _, q := range queues {
		if err := w.Start(queueConfig(q, nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	// Each round: a BacklogInterval later, every queue gets a message, runs
	// it and parks caught up, which asks for its backlog.
	for round := 0; round < 3; round++ {
		clock.Advance(2 * DefaultBacklogInterval)
		n := len(ex.runList())
		for _, q := range queues {
			mem.add(q, msg(fmt.Sprintf("%s-%d", q, round)))
			w.Wake(q)
		}
		waitFor(t, fmt.Sprintf("round %d's messages to run while a backlog read is held", round), func() bool {
			return len(ex.runList()) == n+len(queues)
		})
		allParked(t, w)
	}
	// The first round trip carries what was asked before it started; the
	// queues that asked while it was held wait for it, each once.
	waitFor(t, "the queues' backlog reads to be asked", func() bool {
		_, asked := log.counts()
		return asked >= 1
	})
	calls, _ := log.counts()
	if calls != 1 {
		t.Fatalf("while the first BacklogMany is held: want no other, have %d calls", calls)
	}
	close(log.release)
	waitFor(t, "every queue's backlog to be measured", func() bool {
		_, asked := log.counts()
		return asked >= len(queues) && len(pendingBacklogs(w)) == 0
	})
	calls, asked := log.counts()
	if calls > 1+len(queues) || asked > len(queues)+len(queues) {
		t.Fatalf("3 queues, asking 3 times each while one read was held: want at most one read per queue after it, have %d calls for %d queues", calls, asked)
	}
	waitFor(t, "the lag gauge to say the measured lag", func() bool {
		v, _ := rec.gauge(metrics.Lag)
		return v == 7
	})
}

// pendingBacklogs returns the queues waiting for the backlogger.
func pendingBacklogs(w *Worker) []string {
	w.backlogs.mu.Lock()
	defer w.backlogs.mu.Unlock()
	var qs []string
	for _, a := range w.backlogs.pending {
		qs = append(qs, a.l.name)
	}
	if w.backlogs.running {
		qs = append(qs, "(running)")
	}
	return qs
}

// agingBacklogLog is a memLog whose queues all hold one message enqueued at
// since: each backlog read says lag 1 and an oldest age of the clock's now
// minus since, as Redis's clock would.
type agingBacklogLog struct {
	*memLog
	clock *testkit.Clock
	since time.Time
}

func (l *agingBacklogLog) BacklogMany(_ context.Context, queues []string, _ []drover.Position) ([]drover.Backlog, []error) {
	out := make([]drover.Backlog, len(queues))
	for i := range out {
		out[i] = drover.Backlog{Lag: 1, OldestAge: l.clock.Now().Sub(l.since)}
	}
	return out, make([]error, len(queues))
}

// A paused queue with a waiting message keeps publishing its backlog, so
// its oldest age rises while it is paused. Before, it published once as it
// parked (issue 30, item 7: drover_oldest_age_seconds stayed at 0.2 s for
// 50 s while ctl status said 47 s and rising), and the gauge then expired:
// the "oldest message too old" alert could not fire for a paused queue.
func TestPausedQueueOldestAgeRises(t *testing.T) {
	mem := newMemLog()
	clock := testkit.NewClock(t0)
	log := &agingBacklogLog{memLog: mem, clock: clock, since: t0}
	rec := &gaugeRecorder{Recorder: metrics.Discard, last: map[string]float32{}, sets: map[string]int{}}
	ex := &scriptedExecutor{}
	w := newTestWorker(t, mem, ex, func(c *Config) {
		c.Clock, c.Store, c.Metrics = clock, log, rec
		c.CommitInterval, c.PromoteInterval, c.PollInterval = DefaultCommitInterval, DefaultPromoteInterval, DefaultPollInterval
	})
	w.SetPause(PauseState{Queues: map[string]bool{"q": true}})
	mem.add("q", msg("m1"))
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	allParked(t, w)
	waitFor(t, "the paused queue's backlog published as it parks", func() bool {
		_, sets := rec.gauge(metrics.OldestAge)
		return sets > 0
	})
	first, _ := rec.gauge(metrics.OldestAge)
	// Each poll moves the clock a BacklogInterval on: the held queue's
	// timer fires and its backlog is read again.
	waitFor(t, "the paused queue's oldest age to rise by a minute", func() bool {
		clock.Advance(DefaultBacklogInterval)
		v, _ := rec.gauge(metrics.OldestAge)
		return v >= first+60
	})
	if n := len(ex.runList()); n != 0 {
		t.Fatalf("paused queue: want no task run, have %d", n)
	}
	// Resumed, the queue runs its message and the backlogger lets it go.
	w.SetPause(PauseState{})
	waitFor(t, "the resumed queue to run its message", func() bool { return len(ex.runList()) == 1 })
	waitFor(t, "the backlogger to stop measuring the resumed queue", func() bool {
		clock.Advance(DefaultBacklogInterval)
		w.backlogs.mu.Lock()
		defer w.backlogs.mu.Unlock()
		return len(w.backlogs.held) == 0 && !w.backlogs.refreshing
	})
}

// The same through the metrics Registry as the binary wires it: the paused
// queue's drover_oldest_age_seconds on /metrics keeps rising past the
// gauges' 2-minute retention, where before it froze and then vanished.
func TestPausedQueueOldestAgeRisesOnMetrics(t *testing.T) {
	mem := newMemLog()
	clock := testkit.NewClock(t0)
	log := &agingBacklogLog{memLog: mem, clock: clock, since: t0}
	reg, err := metrics.Setup(metrics.SetupConfig{Prometheus: true, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	w := newTestWorker(t, mem, &scriptedExecutor{}, func(c *Config) {
		c.Clock, c.Store, c.Metrics = clock, log, reg
		c.CommitInterval, c.PromoteInterval, c.PollInterval = DefaultCommitInterval, DefaultPromoteInterval, DefaultPollInterval
	})
	w.SetPause(PauseState{All: true})
	mem.add("q", msg("m1"))
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	age := func() float64 {
		rec := httptest.NewRecorder()
		reg.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if v, ok := strings.CutPrefix(line, `drover_oldest_age_seconds{queue="q"} `); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		return -1
	}
	waitFor(t, "the paused queue's oldest age on /metrics past the 2-minute gauge retention", func() bool {
		clock.Advance(DefaultBacklogInterval)
		return age() >= 180
	})
}
