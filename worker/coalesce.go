package worker

import (
	"context"
	"slices"
	"sync"
	"time"
)

// coalescer gathers one kind of call of many queue loops into shared round
// trips ("group commit", as the producers' enqueue coalescer does): a call
// that finds fewer than inFlight round trips in flight starts one at once,
// so a lone call waits for nothing; calls that arrive while inFlight are in
// flight go in the next, up to limit together. Its goroutines run while
// calls wait and exit when none does: an idle worker holds none. The
// reader (read.go) and the promoter (promote.go) are coalescers.
//
// Without it each loop's call took a connection of the Redis client's pool
// for its own round trip: with thousands of loops busy at once, thousands
// of calls queued for the pool's 20 connections (docs/decisions.md, "Issue
// 43: promotions in shared round trips").
type coalescer[Q, R any] struct {
	// send makes the round trip of calls, none of whose contexts had ended
	// when it was cut, and sets each call's res; the coalescer then
	// answers them.
	send     func(calls []*coalesced[Q, R])
	limit    int // the most calls a round trip carries
	inFlight int // the most round trips in flight

	mu      sync.Mutex
	pending []*coalesced[Q, R]
	senders int // goroutines sending round trips

	rounds, calls int // round trips and calls sent, for tests and stages
}

// coalesced is one loop's call and, once done is closed, its result.
type coalesced[Q, R any] struct {
	ctx  context.Context
	req  Q
	res  R
	err  error // the call's context ended before it was sent
	done chan struct{}
	at   time.Time // when it was handed to the coalescer
}

// do sends req with the other loops' calls and returns its result. A call
// whose ctx ends before it is sent is not sent: it returns ctx's error. Once
// sent, do waits for the round trip (send bounds it).
func (c *coalescer[Q, R]) do(ctx context.Context, req Q) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	call := &coalesced[Q, R]{ctx: ctx, req: req, done: make(chan struct{}), at: time.Now()}
	c.mu.Lock()
	c.pending = append(c.pending, call)
	if c.senders < max(c.inFlight, 1) {
		c.senders++
		go c.run()
	}
	c.mu.Unlock()
	select {
	case <-call.done:
		return call.res, call.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	if i := slices.Index(c.pending, call); i >= 0 {
		c.pending = slices.Delete(c.pending, i, i+1)
		c.mu.Unlock()
		return zero, ctx.Err()
	}
	c.mu.Unlock()
	<-call.done // in flight: its result is definite
	return call.res, call.err
}

// run sends the waiting calls, a round trip at a time, until none waits;
// up to inFlight goroutines run it at once.
func (c *coalescer[Q, R]) run() {
	for {
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.senders--
			c.mu.Unlock()
			return
		}
		n := min(len(c.pending), c.limit)
		batch := slices.Clone(c.pending[:n])
		c.pending = slices.Delete(c.pending, 0, n)
		c.rounds++
		c.calls += n
		c.mu.Unlock()
		live := batch[:0:0]
		for _, call := range batch {
			if err := call.ctx.Err(); err != nil {
				call.err = err
				close(call.done) // its loop stopped meanwhile: not sent
				continue
			}
			live = append(live, call)
		}
		if len(live) > 0 {
			c.send(live)
			for _, call := range live {
				close(call.done)
			}
		}
	}
}

// stats returns the round trips and calls sent so far.
func (c *coalescer[Q, R]) stats() (rounds, calls int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rounds, c.calls
}
