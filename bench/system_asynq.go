package main

import (
	"context"

	"github.com/hibiken/asynq"
)

// asynqPeer runs the workloads on github.com/hibiken/asynq with its default
// server configuration except Concurrency, on the same Redis.
type asynqPeer struct {
	opt    asynq.RedisClientOpt
	client *asynq.Client
}

func newAsynqPeer(srv *servers) *asynqPeer {
	opt := asynq.RedisClientOpt{Addr: srv.redis.Addr, PoolSize: 64}
	return &asynqPeer{opt: opt, client: asynq.NewClient(opt)}
}

func (a *asynqPeer) name() string { return "asynq" }
func (a *asynqPeer) close()       { a.client.Close() }

// enqueueOne implements peer: one Client.Enqueue call.
func (a *asynqPeer) enqueueOne(ctx context.Context, kind taskKind, i int) error {
	_, err := a.client.EnqueueContext(ctx, asynq.NewTask(string(kind), payload(i)))
	return err
}

// server implements peer: an asynq.Server with handle for every task.
func (a *asynqPeer) server(kind taskKind, concurrency int, handle func() error) (start func() error, stop func()) {
	srv := asynq.NewServer(a.opt, asynq.Config{Concurrency: concurrency, Logger: nopLogger{}, LogLevel: asynq.FatalLevel})
	h := asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return handle() })
	return func() error { return srv.Start(h) }, srv.Shutdown
}

// nopLogger silences asynq.
type nopLogger struct{}

func (nopLogger) Debug(...any) {}
func (nopLogger) Info(...any)  {}
func (nopLogger) Warn(...any)  {}
func (nopLogger) Error(...any) {}
func (nopLogger) Fatal(...any) {}
