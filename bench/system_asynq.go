package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
)

// asynqSystem runs the workloads on github.com/hibiken/asynq with its
// default server configuration except Concurrency, on the same Redis.
type asynqSystem struct {
	opt    asynq.RedisClientOpt
	client *asynq.Client
}

func newAsynqSystem(srv *servers) *asynqSystem {
	opt := asynq.RedisClientOpt{Addr: srv.redis.Addr, PoolSize: 64}
	return &asynqSystem{opt: opt, client: asynq.NewClient(opt)}
}

func (a *asynqSystem) name() string { return "asynq" }
func (a *asynqSystem) close()       { a.client.Close() }

// enqueue implements system: one Client.Enqueue call per task.
func (a *asynqSystem) enqueue(ctx context.Context, n, g int) (time.Duration, error) {
	start := time.Now()
	err := fanOut(ctx, n, g, func(i int) error {
		_, err := a.client.EnqueueContext(ctx, asynq.NewTask(string(kindNoop), payload(i)))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("asynq enqueue: %w", err)
	}
	return time.Since(start), nil
}

// prepare implements system.
func (a *asynqSystem) prepare(ctx context.Context, kind taskKind, n int) error {
	if err := fanOut(ctx, n, 16, func(i int) error {
		_, err := a.client.EnqueueContext(ctx, asynq.NewTask(string(kind), payload(i)))
		return err
	}); err != nil {
		return fmt.Errorf("asynq: pre-enqueue: %w", err)
	}
	return nil
}

// process implements system. Done means: the handler returned for the last
// task.
func (a *asynqSystem) process(ctx context.Context, kind taskKind, n, concurrency int) (time.Duration, error) {
	handled := newCounter(n)
	var failed error
	h := asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		if kind == kindTrue {
			if err := runTrue(); err != nil {
				failed = err
				return err
			}
		}
		handled.add()
		return nil
	})
	srv := asynq.NewServer(a.opt, asynq.Config{Concurrency: concurrency, Logger: nopLogger{}, LogLevel: asynq.FatalLevel})
	start := time.Now()
	if err := srv.Start(h); err != nil {
		return 0, fmt.Errorf("asynq: start server: %w", err)
	}
	err := handled.wait(ctx, processTimeout)
	elapsed := time.Since(start)
	srv.Shutdown()
	if err != nil {
		return 0, fmt.Errorf("asynq %s: %w", kind, err)
	}
	if failed != nil {
		return 0, fmt.Errorf("asynq %s: handler failed: %w", kind, failed)
	}
	return elapsed, nil
}

// nopLogger silences asynq.
type nopLogger struct{}

func (nopLogger) Debug(...any) {}
func (nopLogger) Info(...any)  {}
func (nopLogger) Warn(...any)  {}
func (nopLogger) Error(...any) {}
func (nopLogger) Fatal(...any) {}
