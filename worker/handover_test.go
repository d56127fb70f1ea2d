package worker

import (
	"bytes"
	"cmp"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// hookLog is a log sink that keeps every line and calls a hook with each,
// on the goroutine that logs it: a test acts at the exact point the worker
// reaches (the fake clock advanced after a timer is armed and before the
// wait on it starts).
type hookLog struct {
	out  testkit.Writer // to the test's log, until its cleanup
	mu   sync.Mutex
	buf  bytes.Buffer
	hook func(line string)
}

func (h *hookLog) Write(b []byte) (int, error) {
	h.mu.Lock()
	h.buf.Write(b)
	hook := h.hook
	h.mu.Unlock()
	h.out.Write(b)
	if hook != nil {
		hook(string(b))
	}
	return len(b), nil
}

func (h *hookLog) setHook(f func(line string)) { h.mu.Lock(); h.hook = f; h.mu.Unlock() }

// lines returns the lines logged so far that contain s.
func (h *hookLog) lines(s string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, l := range strings.Split(h.buf.String(), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// handOverRun is a worker on a fake clock with a drain timeout of 5 s,
// running queue q (timeout 60 s, one task at a time) whose first message,
// hold1, is held by the executor until the test releases it (or the task is
// killed); m2 waits behind it.
type handOverRun struct {
	w     *Worker
	clock *testkit.Clock
	ex    *holdingExecutor
	claim *memClaim
	log   *hookLog
	hold  drover.Position // hold1's position
}

func startHandOver(t *testing.T) *handOverRun {
	t.Helper()
	mem := newMemLog()
	mem.add("q", msg("hold1"))
	mem.add("q", msg("m2"))
	entries, _ := mem.ReadAfter(context.Background(), "q", 0, 1)
	hr := &handOverRun{clock: testkit.NewClock(time.Unix(1_700_000_000, 0)), ex: newHoldingExecutor(), claim: &memClaim{},
		log: &hookLog{out: testkit.NewWriter(t)}, hold: entries[0].Position}
	hr.w = newTestWorker(t, mem, hr.ex, func(c *Config) {
		c.Clock = hr.clock
		c.DrainTimeout = 5 * time.Second
		c.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: hr.log})
	})
	qc := queueConfig("q", func(q *drover.QueueConfig) {
		q.Concurrency = 1
		q.Timeout = drover.Duration(time.Minute)
	})
	if err := hr.w.Start(qc, hr.claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hold1 running", func() bool { return hr.ex.held.Load() == 1 })
	return hr
}

// stop runs Stop in a goroutine; its error arrives on the channel.
func (hr *handOverRun) stop(ctx context.Context, kind drover.StopKind) <-chan error {
	out := make(chan error, 1)
	go func() { out <- hr.w.Stop(ctx, "q", kind) }()
	return out
}

// released returns the offset the claim was released with, or nil.
func (hr *handOverRun) released() *drover.Offset {
	hr.claim.mu.Lock()
	defer hr.claim.mu.Unlock()
	return hr.claim.released
}

// Issue 40: a queue that moves for balance (a planned stop) lets its
// running task finish however long past the drain timeout it runs (within
// its own timeout), starts nothing more, and releases after it; the next
// owner starts behind it. Before, every stop drained for the drain timeout
// and then killed the task, which ran again under the next owner.
func TestAPlannedStopLetsTheRunningTaskFinishPastTheDrainTimeout(t *testing.T) {
	hr := startHandOver(t)
	// The clock passes the drain timeout as the stop starts waiting for
	// the task (on the loop's goroutine: any drain timer is armed by then).
	var passed atomic.Bool
	hr.log.setHook(func(line string) {
		if strings.Contains(line, "waiting for") && passed.CompareAndSwap(false, true) {
			hr.clock.Advance(6 * time.Second)
		}
	})
	stopped := hr.stop(context.Background(), drover.StopPlanned)
	waitFor(t, "the stop waiting for hold1, the clock past the drain timeout", passed.Load)
	close(hr.ex.release) // the task ends, 6 s after the stop began
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if runs := hr.ex.runList(); len(runs) != 1 || runs[0] != "hold1#0" {
		t.Fatalf("want hold1 run to its end once and m2 not started, have runs %v (a killed task does not reach the end)", runs)
	}
	rel := hr.released()
	if rel == nil || rel.Position != hr.hold {
		t.Fatalf("want the claim released after hold1 (position %d), have %+v", hr.hold, rel)
	}
	lines := hr.log.lines("handing over: waiting for running task")
	deadline := hr.clock.Now().Add(-6 * time.Second).Add(time.Minute).UTC().Format(time.RFC3339) // started at the clock's start
	if len(lines) != 1 || !strings.Contains(lines[0], "id=hold1") || !strings.Contains(lines[0], "deadline="+deadline) {
		t.Fatalf("want one line naming hold1 and its deadline (%s), have %q", deadline, lines)
	}
	if k := hr.log.lines("killing"); len(k) != 0 {
		t.Fatalf("a planned stop kills nothing, have %q", k)
	}
}

// Issue 40: the member starting to leave (a Stop that leaves, or a
// StopQueues that leaves: the reconciler's stop of every owned queue)
// while a planned stop waits for a task cuts that wait to the drain
// timeout, counted from the leave: the task is killed then, and both stops
// return with the queue released before it (it runs again under the next
// owner, as at any leave).
func TestALeaveCutsAPlannedStopToTheDrainTimeout(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave func(hr *handOverRun) <-chan error
	}{
		{"Stop that leaves", func(hr *handOverRun) <-chan error { return hr.stop(context.Background(), drover.StopLeave) }},
		{"StopQueues that leaves", func(hr *handOverRun) <-chan error {
			out := make(chan error, 1)
			go func() {
				var first error
				hr.w.StopQueues(context.Background(), hr.w.Owned(), drover.StopLeave, func(_ string, err error) { first = cmp.Or(first, err) })
				out <- first
			}()
			return out
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hr := startHandOver(t)
			var waiting atomic.Bool
			hr.log.setHook(func(line string) {
				if strings.Contains(line, "waiting for") && waiting.CompareAndSwap(false, true) {
					hr.clock.Advance(10 * time.Second) // past the drain timeout: nothing happens
				}
			})
			planned := hr.stop(context.Background(), drover.StopPlanned)
			waitFor(t, "the planned stop waiting for hold1", func() bool { return waiting.Load() || len(planned) > 0 })
			if len(planned) > 0 {
				t.Fatalf("the planned stop ended before the leave (%v): its task was killed at the drain timeout", <-planned)
			}
			// The leave arms its drain timeout, then cuts the planned wait
			// (it says so); the clock then passes that drain timeout.
			hr.log.setHook(func(line string) {
				if strings.Contains(line, "handing over cut short") {
					hr.clock.Advance(5 * time.Second)
				}
			})
			left := tc.leave(hr)
			for _, ch := range []<-chan error{left, planned} {
				if err := <-ch; err != nil {
					t.Fatal(err)
				}
			}
			if runs := hr.ex.runList(); len(runs) != 0 {
				t.Fatalf("want hold1 killed at the leave's drain timeout and m2 not started, have runs %v", runs)
			}
			if rel := hr.released(); rel == nil || rel.Position >= hr.hold {
				t.Fatalf("want the claim released before the killed hold1 (position %d), have %+v", hr.hold, rel)
			}
			if len(hr.w.Owned()) != 0 {
				t.Fatalf("want no queue left, have %v", hr.w.Owned())
			}
		})
	}
}

// A session lost while a planned stop waits (Stop's ctx ends) kills the
// task at once, whatever its timeout (DESIGN.md §11, "Session loss").
func TestASessionLossAbortsAPlannedStopAtOnce(t *testing.T) {
	hr := startHandOver(t)
	var waiting atomic.Bool
	hr.log.setHook(func(line string) {
		if strings.Contains(line, "waiting for") {
			waiting.Store(true)
		}
	})
	ctx, lose := context.WithCancel(context.Background())
	stopped := hr.stop(ctx, drover.StopPlanned)
	waitFor(t, "the planned stop waiting for hold1", waiting.Load)
	lose()
	<-stopped // no clock advance: the abort does not wait for a timer
	if runs := hr.ex.runList(); len(runs) != 0 {
		t.Fatalf("want hold1 aborted by the loss, have runs %v", runs)
	}
}
