package worker

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/worker/executor"
)

// abortOnceExecutor aborts the first attempt of message id by itself, its
// context alive, as the subprocess executor does when the task lease went
// stale between AwaitFresh and the fork ("aborted at start: the lease went
// stale before the task started"): the attempt did not count. Every other
// attempt succeeds.
type abortOnceExecutor struct {
	*scriptedExecutor
	id      string
	mu      sync.Mutex
	aborted bool
}

func (e *abortOnceExecutor) Execute(ctx context.Context, t *executor.Task) executor.Result {
	e.mu.Lock()
	abort := t.Message.ID == e.id && !e.aborted
	e.aborted = e.aborted || abort
	e.mu.Unlock()
	res := e.scriptedExecutor.Execute(ctx, t) // records the run
	if abort {
		return executor.Result{Outcome: executor.OutcomeAborted, ExitCode: -1,
			Reason: "aborted at start: the lease went stale before the task started (the worker was frozen)"}
	}
	return res
}

// An attempt the executor aborts by itself, while the queue runs on (not
// stopping, not lost), did not run: the message runs again here, before
// anything behind it in an ordered queue, and the committed offset passes
// it. Found by the chaos run (redis-cut, redis-cut-all): the runner
// reported the message "not finished here", the loop took the report as a
// queue's shutdown would, and ran on: ordered queue q06 ran every message
// behind its head while the head never ran, and its offset never passed
// it.
func TestAttemptAbortedByTheExecutorRunsAgainHere(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		name := "unordered"
		if ordered {
			name = "ordered"
		}
		t.Run(name, func(t *testing.T) {
			log := newMemLog()
			for _, id := range []string{"a", "b", "c"} {
				log.add("q", msg(id))
			}
			ex := &abortOnceExecutor{scriptedExecutor: &scriptedExecutor{}, id: "b"}
			w := newTestWorker(t, log, ex, nil)
			claim := &memClaim{}
			if err := w.Start(queueConfig("q", func(q *drover.QueueConfig) {
				if ordered {
					q.Ordered, q.Concurrency = true, 0
				}
			}), claim); err != nil {
				t.Fatal(err)
			}
			// Once c ran and the queue parked, its work is done: b must
			// have run again by then (a second attempt 0: the aborted
			// one did not count), and in an ordered queue before c.
			l := w.loop("q")
			waitFor(t, "c to run and the queue to park", func() bool {
				return slices.Contains(ex.runList(), "c#0") && l.parked()
			})
			have := ex.runList()
			want := []string{"a#0", "b#0", "b#0", "c#0"}
			if !ordered {
				have, want = sortedCopy(have), sortedCopy(want)
			}
			if !slices.Equal(have, want) {
				t.Fatalf("runs: want %v, have %v", want, have)
			}
			waitFor(t, "the offset to pass b and c", func() bool { return claim.committed() == 3 })
			if n := log.deadCount("q"); n != 0 {
				t.Fatalf("want no dead letter, have %d", n)
			}
		})
	}
}
