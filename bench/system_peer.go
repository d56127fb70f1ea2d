package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A peer is a task queue Drover is compared with (asynq, gocraft/work):
// only what the peers differ in, their own calls. peerSystem runs every
// workload on a peer the same way, so that the peers are measured alike.
type peer interface {
	name() string
	// enqueueOne enqueues task i of kind with the peer's ordinary
	// single-task enqueue API.
	enqueueOne(ctx context.Context, kind taskKind, i int) error
	// server prepares the peer's worker server to call handle for every
	// task of kind at the given concurrency; start starts it (the clock
	// runs from there) and stop stops it.
	server(kind taskKind, concurrency int, handle func() error) (start func() error, stop func())
	close()
}

// peerSystem implements system on a peer.
type peerSystem struct{ peer }

// enqueue implements system: one enqueueOne call per task.
func (p peerSystem) enqueue(ctx context.Context, n, g int) (time.Duration, error) {
	start := time.Now()
	err := fanOut(ctx, n, g, func(i int) error { return p.enqueueOne(ctx, kindNoop, i) })
	if err != nil {
		return 0, fmt.Errorf("%s enqueue: %w", p.name(), err)
	}
	return time.Since(start), nil
}

// prepare implements system.
func (p peerSystem) prepare(ctx context.Context, kind taskKind, n int) error {
	if err := fanOut(ctx, n, 16, func(i int) error { return p.enqueueOne(ctx, kind, i) }); err != nil {
		return fmt.Errorf("%s: pre-enqueue: %w", p.name(), err)
	}
	return nil
}

// process implements system. Done means: the handler returned for the last
// task. The handler runs /bin/true (plain os/exec) for kindTrue and
// returns at once for kindNoop.
func (p peerSystem) process(ctx context.Context, kind taskKind, n, concurrency int) (time.Duration, error) {
	handled := newCounter(n)
	var (
		mu     sync.Mutex
		failed error
	)
	start, stop := p.server(kind, concurrency, func() error {
		if kind == kindTrue {
			if err := runTrue(); err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
				return err
			}
		}
		handled.add()
		return nil
	})
	began := time.Now()
	if err := start(); err != nil {
		return 0, fmt.Errorf("%s: start server: %w", p.name(), err)
	}
	err := handled.wait(ctx, processTimeout)
	elapsed := time.Since(began)
	stop()
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", p.name(), kind, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		return 0, fmt.Errorf("%s %s: handler failed: %w", p.name(), kind, failed)
	}
	return elapsed, nil
}
