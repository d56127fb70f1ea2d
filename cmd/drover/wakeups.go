package main

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/worker"
)

// routedWorker is the worker as the fleet runs it: starting a queue first
// routes the queue's wake-ups to this member (queue.RouteWakeups), so that
// enqueues wake this member alone (docs/redis-schema.md, Wake-ups). A route
// that fails is logged and the queue runs anyway: the worker finds its
// messages by polling.
type routedWorker struct {
	*worker.Worker
	store  *queue.Store
	member string
	log    hclog.Logger
}

func (r routedWorker) Start(cfg drover.QueueConfig, claim drover.Claim) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := r.store.RouteWakeups(ctx, r.member, cfg.Name)
	cancel()
	if err != nil {
		r.log.Warn("wake-ups of the queue not routed here; it is polled", "queue", cfg.Name, "error", err)
	}
	return r.Worker.Start(cfg, claim)
}

// wakeQueues feeds the member's wake-ups to the worker until ctx ends.
func wakeQueues(ctx context.Context, store *queue.Store, member string, w *worker.Worker, log hclog.Logger) {
	ch, err := store.Wakeups(ctx, member)
	if err != nil {
		log.Warn("no enqueue notifications; queues poll", "error", err)
		<-ctx.Done()
		return
	}
	for wk := range ch {
		if wk.Queue != "" { // Missed: the queue loops poll anyway
			w.Wake(wk.Queue)
		}
	}
}
