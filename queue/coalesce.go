package queue

import (
	"context"
	"runtime"
	"slices"
	"sync"
)

// coalescer sends concurrent Enqueue calls to Redis together ("group
// commit"). The first caller to arrive while nothing is in flight becomes
// the leader and flushes at once, so a lone caller pays no extra latency.
// Callers arriving while a flush is in flight queue up; when the flush
// returns, the leader hands leadership to the first of them, which flushes
// its own request and the whole queue (up to max requests) in one pipeline.
// Every request gets its own result.
//
// One flush is in flight at a time. Two in flight (the client encoding the
// next while Redis runs one) measured worse with eight producers on this
// 2-core machine: each carried half as many messages, so every message cost
// more CPU on both sides (docs/decisions.md, "Worker path and enqueue cost").
//
// When the previous flush carried several requests, a new leader first
// yields once (runtime.Gosched), so that the callers that flush just
// answered, runnable but not yet back, join this one: with eight producers a
// round trip then carries several messages rather than alternating between
// one and seven.
type coalescer struct {
	max   int
	flush func(ctx context.Context, batch []*enqueueRequest)

	mu      sync.Mutex
	busy    bool // a leader is flushing
	pending []*enqueueRequest
	// shared says the last flush carried more than one request: callers
	// are concurrent, and the ones it just answered are about to come back.
	shared bool
}

// submit sends r and waits for its result (r.res, r.err).
//
// If ctx ends while r is still waiting to be sent, submit returns ctx.Err()
// and r was not sent: nothing was enqueued. Once r is sent, submit waits for
// the reply (bounded by the client's read timeout), so the result is always
// definite. A flush runs without the caller's cancellation, because it
// carries other callers' requests too.
func (c *coalescer) submit(ctx context.Context, r *enqueueRequest) {
	if err := ctx.Err(); err != nil {
		r.err = err
		return
	}
	c.mu.Lock()
	if c.busy {
		// A flush is in flight: wait in the queue.
		r.ready = make(chan struct{}, 1)
		c.pending = append(c.pending, r)
		c.mu.Unlock()
		select {
		case <-r.ready:
		case <-ctx.Done():
			c.mu.Lock()
			if i := slices.Index(c.pending, r); i >= 0 {
				c.pending = slices.Delete(c.pending, i, i+1)
				c.mu.Unlock()
				r.err = ctx.Err()
				return
			}
			c.mu.Unlock()
			<-r.ready // in flight, or just made leader
		}
		if !r.lead {
			return
		}
		c.mu.Lock()
	} else {
		c.busy = true
	}
	// Leader: this request is not in the queue (a leader's own request
	// never is).
	if c.shared && len(c.pending) < c.max-1 {
		// The callers the last flush answered are runnable but have not
		// submitted again yet: yield once so that they join this flush
		// rather than wait a whole round trip for the next one. A lone
		// caller never yields (its flushes carry one request).
		c.mu.Unlock()
		runtime.Gosched()
		c.mu.Lock()
	}
	// Take this request and the queue (up to max in all), flush, hand over.
	n := min(len(c.pending)+1, c.max)
	var batch []*enqueueRequest
	if n == 1 {
		r.alone[0] = r
		batch = r.alone[:] // a lone caller: no allocation
	} else {
		batch = make([]*enqueueRequest, n)
		batch[0] = r
		copy(batch[1:], c.pending[:n-1])
		c.pending = slices.Delete(c.pending, 0, n-1)
	}
	c.mu.Unlock()

	c.flush(detached(ctx), batch)
	for _, b := range batch {
		if b != r {
			b.ready <- struct{}{}
		}
	}

	c.mu.Lock()
	c.shared = n > 1
	if len(c.pending) > 0 {
		// Hand leadership to the first waiter, out of the queue.
		next := c.pending[0]
		c.pending = slices.Delete(c.pending, 0, 1)
		next.lead = true
		next.ready <- struct{}{}
	} else {
		c.busy = false
	}
	c.mu.Unlock()
}

// detached is ctx without its cancellation: context.WithoutCancel, except
// that a context that can never end (Done is nil: Background, TODO, or
// values over them) is returned as it is, saving a lone caller of such a
// context an allocation per call.
func detached(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
