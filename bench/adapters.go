package main

import (
	"context"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/worker"
)

// The adapters between the worker's small interfaces and the concrete
// stores, copied from cmd/drover/adapters.go (package main cannot be
// imported). Compile-time assertions keep them honest.
var (
	_ worker.Log      = queueLog{}
	_ worker.Requeuer = queueLog{}
	_ worker.Claim    = (*watchedClaim)(nil)
)

// queueLog adapts *queue.Store to worker.Log and worker.Requeuer.
type queueLog struct{ s *queue.Store }

func (l queueLog) ReadAfter(ctx context.Context, q string, after drover.Position, n int) ([]worker.Delivery, error) {
	es, err := l.s.ReadAfter(ctx, q, after, n)
	if err != nil {
		return nil, err
	}
	ds := make([]worker.Delivery, len(es))
	for i := range es {
		e := &es[i]
		m, err := e.Decode()
		ds[i] = worker.Delivery{Position: e.Position, ID: e.ID, Raw: e.Raw, Message: m, Err: err}
	}
	return ds, nil
}

func (l queueLog) PromoteDue(ctx context.Context, q string, now time.Time, limit int) (int, error) {
	return l.s.PromoteDue(ctx, q, now, limit)
}

func (l queueLog) Trim(ctx context.Context, q string, off drover.Position, retention time.Duration) error {
	_, err := l.s.Trim(ctx, q, off, retention)
	return err
}

func (l queueLog) Retry(ctx context.Context, m *drover.Message, due time.Time) error {
	return l.s.Retry(ctx, m, due)
}

func (l queueLog) DeadLetter(ctx context.Context, q string, d drover.DeadLetter) error {
	raw := d.Raw
	if d.Message != nil {
		b, err := d.Message.MarshalJSON()
		if err != nil {
			return err
		}
		raw = b
	}
	return l.s.Kill(ctx, q, d.ID, raw, d.Failure)
}

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
