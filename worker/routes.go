package worker

import (
	"context"
	"sync"
	"time"
)

// Bounds of the route writer: one call's timeout, and the wait before a
// failed batch is tried again (Redis away: its queues run meanwhile, found
// by the backstop check).
const (
	routeTimeout = 5 * time.Second
	routeRetry   = time.Second
)

// router routes the wake-ups of the queues the worker starts, in batches,
// on one goroutine of its own that runs while routes are owed: Start never
// waits on Redis, so neither does the reconciler that calls it (a slow or
// absent Redis delays a queue's wake-ups, never the next assignment, stop
// or loss). A queue is checked once more after its route is written: a
// message enqueued between the queue's first check and the route woke the
// previous owner, or no one.
type router struct {
	w *Worker

	mu      sync.Mutex
	owed    []string // queues started and not routed yet, in order
	running bool     // the goroutine runs
	done    chan struct{}
}

func newRouter(w *Worker) *router { return &router{w: w} }

// add owes the route of queue and makes sure the goroutine runs.
func (r *router) add(queue string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.owed = append(r.owed, queue)
	if !r.running {
		r.running = true
		r.done = make(chan struct{})
		go r.run(r.done)
	}
}

// run writes the owed routes until none is owed.
func (r *router) run(done chan struct{}) {
	defer close(done)
	for {
		r.mu.Lock()
		batch := r.owed
		r.owed = nil
		if len(batch) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		batch = r.stillRunning(batch)
		if len(batch) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), routeTimeout)
		err := r.w.cfg.Store.RouteWakeups(ctx, r.w.cfg.Member, batch...)
		cancel()
		if err != nil {
			r.w.cfg.Logger.Warn("wake-ups not routed here yet; the backstop check finds their messages meanwhile",
				"queues", len(batch), "error", err, "retry_in", routeRetry)
			r.mu.Lock()
			r.owed = append(batch, r.owed...)
			r.mu.Unlock()
			t := r.w.cfg.Clock.NewTimer(routeRetry)
			<-t.C()
			continue
		}
		for _, q := range batch {
			r.w.idle.started(q) // checked again, with the others routed meanwhile
		}
	}
}

// stillRunning keeps the queues of batch the worker still runs.
func (r *router) stillRunning(batch []string) []string {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	out := batch[:0]
	for _, q := range batch {
		if r.w.queues[q] != nil {
			out = append(out, q)
		}
	}
	return out
}

// wait returns when the goroutine is not running (tests).
func (r *router) wait() {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done != nil {
		<-done
	}
}
