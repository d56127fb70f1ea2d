package main

import (
	"context"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/worker"
)

// The benchmark wires the product's own stores (*queue.Store); only the
// claim is wrapped, to see when a committed offset reaches a position.
var _ worker.Claim = (*watchedClaim)(nil)

// watchedClaim is a real coordinator claim that also reports, to the
// benchmark, when a committed offset reaches a position.
type watchedClaim struct {
	*coordinator.Claim

	mu       sync.Mutex
	commits  int
	inCommit time.Duration // total time spent in Commit
	maxWait  time.Duration // the longest Commit
	target   drover.Position
	done     chan struct{} // closed once a commit reached target
}

func newWatchedClaim(c *coordinator.Claim, target drover.Position) *watchedClaim {
	return &watchedClaim{Claim: c, target: target, done: make(chan struct{})}
}

// Commit implements worker.Claim.
func (c *watchedClaim) Commit(ctx context.Context, off drover.Offset) error {
	start := time.Now()
	err := c.Claim.Commit(ctx, off)
	took := time.Since(start)
	c.mu.Lock()
	c.commits++
	c.inCommit += took
	c.maxWait = max(c.maxWait, took)
	c.mu.Unlock()
	if err == nil {
		c.reached(off.Position)
	}
	return err
}

// Release implements worker.Claim.
func (c *watchedClaim) Release(ctx context.Context, off drover.Offset) error {
	err := c.Claim.Release(ctx, off)
	if err == nil {
		c.reached(off.Position)
	}
	return err
}

func (c *watchedClaim) reached(p drover.Position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p >= c.target {
		select {
		case <-c.done:
		default:
			close(c.done)
		}
	}
}
