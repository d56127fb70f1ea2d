package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testkit"
	"github.com/drover-dev/drover/metrics"
)

// heldBacklogLog is a memLog that measures backlogs many at a time; a
// BacklogMany waits until release is closed, and a lone Backlog fails the
// test (a worker with a BatchBacklogReader must not read one by one).
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
		c.Clock, c.Log, c.Metrics = clock, log, rec
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
