package main

import (
	"context"

	"github.com/gocraft/work"
	"github.com/gomodule/redigo/redis"
)

// gocraftPeer runs the workloads on github.com/gocraft/work (v0.5.1, its
// last release) on the same Redis.
type gocraftPeer struct {
	pool     *redis.Pool
	enqueuer *work.Enqueuer
}

const gocraftNamespace = "bench"

func newGocraftPeer(srv *servers) *gocraftPeer {
	pool := &redis.Pool{
		MaxActive: 64, MaxIdle: 64, Wait: true,
		Dial: func() (redis.Conn, error) { return redis.Dial("tcp", srv.redis.Addr) },
	}
	return &gocraftPeer{pool: pool, enqueuer: work.NewEnqueuer(gocraftNamespace, pool)}
}

func (g *gocraftPeer) name() string { return "gocraft/work" }
func (g *gocraftPeer) close()       { g.pool.Close() }

// gocraftContext is the worker pool's per-job context type.
type gocraftContext struct{}

// enqueueOne implements peer: one Enqueuer.Enqueue call.
func (g *gocraftPeer) enqueueOne(_ context.Context, kind taskKind, i int) error {
	_, err := g.enqueuer.Enqueue(string(kind), work.Q{"n": i})
	return err
}

// server implements peer: a work.WorkerPool with handle as kind's job.
func (g *gocraftPeer) server(kind taskKind, concurrency int, handle func() error) (start func() error, stop func()) {
	wp := work.NewWorkerPool(gocraftContext{}, uint(concurrency), gocraftNamespace, g.pool)
	wp.Job(string(kind), func(*work.Job) error { return handle() })
	return func() error { wp.Start(); return nil }, wp.Stop
}
