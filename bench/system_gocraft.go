package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gocraft/work"
	"github.com/gomodule/redigo/redis"
)

// gocraftSystem runs the workloads on github.com/gocraft/work (v0.5.1, its
// last release) on the same Redis.
type gocraftSystem struct {
	pool     *redis.Pool
	enqueuer *work.Enqueuer
}

const gocraftNamespace = "bench"

func newGocraftSystem(srv *servers) *gocraftSystem {
	pool := &redis.Pool{
		MaxActive: 64, MaxIdle: 64, Wait: true,
		Dial: func() (redis.Conn, error) { return redis.Dial("tcp", srv.redis.Addr) },
	}
	return &gocraftSystem{pool: pool, enqueuer: work.NewEnqueuer(gocraftNamespace, pool)}
}

func (g *gocraftSystem) name() string { return "gocraft/work" }
func (g *gocraftSystem) close()       { g.pool.Close() }

// gocraftContext is the worker pool's per-job context type.
type gocraftContext struct{}

// enqueue implements system: one Enqueuer.Enqueue call per task.
func (g *gocraftSystem) enqueue(ctx context.Context, n, gs int) (time.Duration, error) {
	start := time.Now()
	err := fanOut(ctx, n, gs, func(i int) error {
		_, err := g.enqueuer.Enqueue(string(kindNoop), work.Q{"n": i})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("gocraft enqueue: %w", err)
	}
	return time.Since(start), nil
}

// prepare implements system.
func (g *gocraftSystem) prepare(ctx context.Context, kind taskKind, n int) error {
	if err := fanOut(ctx, n, 16, func(i int) error {
		_, err := g.enqueuer.Enqueue(string(kind), work.Q{"n": i})
		return err
	}); err != nil {
		return fmt.Errorf("gocraft: pre-enqueue: %w", err)
	}
	return nil
}

// process implements system. Done means: the handler returned for the last
// job.
func (g *gocraftSystem) process(ctx context.Context, kind taskKind, n, concurrency int) (time.Duration, error) {
	handled := newCounter(n)
	var failed error
	wp := work.NewWorkerPool(gocraftContext{}, uint(concurrency), gocraftNamespace, g.pool)
	wp.Job(string(kind), func(*work.Job) error {
		if kind == kindTrue {
			if err := runTrue(); err != nil {
				failed = err
				return err
			}
		}
		handled.add()
		return nil
	})
	start := time.Now()
	wp.Start()
	err := handled.wait(ctx, processTimeout)
	elapsed := time.Since(start)
	wp.Stop()
	if err != nil {
		return 0, fmt.Errorf("gocraft %s: %w", kind, err)
	}
	if failed != nil {
		return 0, fmt.Errorf("gocraft %s: handler failed: %w", kind, failed)
	}
	return elapsed, nil
}
