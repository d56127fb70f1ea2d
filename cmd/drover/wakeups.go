package main

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/worker"
)

// The store is the worker's amortised backstop against lost wake-ups: heads
// every poll interval, the full check for queues just started and after
// missed wake-ups.
var (
	_ worker.QueueChecker = (*queue.Store)(nil)
	_ worker.HeadReader   = (*queue.Store)(nil)
	_ worker.BatchTrimmer = (*queue.Store)(nil)
)

// wakeQueues feeds the member's wake-ups to the worker until ctx ends: a
// wake-up starts the queue's parked loop, a due time goes to the worker's
// idle scheduler, and a Missed wake-up (the subscription reconnected, or
// this reader fell behind) makes the worker check every parked queue at
// once, in one amortised pass. Without a subscription the worker's
// backstop check (every poll interval) still finds every message.
func wakeQueues(ctx context.Context, store *queue.Store, member string, w *worker.Worker, log hclog.Logger) {
	ch, err := store.Wakeups(ctx, member)
	if err != nil {
		log.Warn("no enqueue notifications; the backstop check finds messages every poll interval", "error", err)
		<-ctx.Done()
		return
	}
	for wk := range ch {
		switch {
		case wk.Missed:
			w.MissedWakeups()
		case !wk.Due.IsZero():
			w.WakeAt(wk.Queue, wk.Due)
		default:
			w.Wake(wk.Queue)
		}
	}
}
