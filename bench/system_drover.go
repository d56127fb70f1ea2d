package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/worker"
	"github.com/drover-dev/drover/worker/executor"
)

// droverSystem runs the workloads on Drover as `drover worker` runs a queue:
// the queue.Store on the private Redis, a real fenced claim from a
// coordinator session on the private ZooKeeper, worker.Worker with the
// executor of executor.New, and enqueue notifications wired to Wake.
type droverSystem struct {
	rdb   *redis.Client
	store *queue.Store
	zk    *coordinator.Session
	exec  executor.Executor
	runs  int // gives every run a fresh queue name
	// prepared is the queue prepare filled, for process.
	prepared preparedQueue
	// lastCommitWait is how long the last processing run's queue loop
	// waited for ZooKeeper commits.
	lastCommitWait time.Duration
}

// droverNoopTask is the inline no-op handler's task name.
const droverNoopTask = "bench-noop"

func newDroverSystem(ctx context.Context, srv *servers) (*droverSystem, error) {
	d := &droverSystem{rdb: srv.redisClient()}
	var err error
	if d.store, err = queue.New(queue.Config{Client: d.rdb}); err != nil {
		return nil, err
	}
	if d.zk, err = srv.connectZK(ctx, "/bench/throughput", "", coordinator.DefaultSessionTimeout); err != nil {
		return nil, err
	}
	if d.exec, err = executor.New(executor.Config{}); err != nil {
		return nil, err
	}
	return d, nil
}

// The no-op handler is registered at init, so that the re-executed children
// of the Go-child workloads find it too, and counts into the current run's
// counter when it runs inline.
var inlineHandled atomic.Pointer[counter]

func init() {
	drover.Register(droverNoopTask, func(context.Context, *drover.Message) error {
		if c := inlineHandled.Load(); c != nil {
			c.add()
		}
		return nil
	})
}

func (d *droverSystem) name() string { return "drover" }

// droverNoWakeName is the enqueue workloads' second Drover entrant: the
// same Producer.Enqueue on a Store with queue.Config.DisableWakeups, so
// that the cost of the wake-up (one :owner read and one PUBLISH per call)
// is measured beside the full enqueue in the same run (issue 43).
const droverNoWakeName = "drover-nowake"

// newDroverNoWake returns that entrant: a droverSystem for enqueue only
// (no ZooKeeper session, no executor).
func newDroverNoWake(srv *servers) (*droverSystem, error) {
	d := &droverSystem{rdb: srv.redisClient()}
	var err error
	if d.store, err = queue.New(queue.Config{Client: d.rdb, DisableWakeups: true}); err != nil {
		d.rdb.Close()
		return nil, err
	}
	return d, nil
}

func (d *droverSystem) close() {
	d.zk.Close()
	d.rdb.Close()
}

func (d *droverSystem) nextQueue(what string) string {
	d.runs++
	return fmt.Sprintf("bench-%s-%d", what, d.runs)
}

func (d *droverSystem) message(q string, kind taskKind, i int) *drover.Message {
	task := droverNoopTask
	if kind == kindTrue {
		task = "bench-true"
	}
	return &drover.Message{Queue: q, Task: task, Args: payload(i)}
}

// enqueue implements system: one Producer.Enqueue call per task.
func (d *droverSystem) enqueue(ctx context.Context, n, g int) (time.Duration, error) {
	q := d.nextQueue("enqueue")
	start := time.Now()
	err := fanOut(ctx, n, g, func(i int) error {
		_, err := d.store.Producer().Enqueue(ctx, d.message(q, kindNoop, i))
		return err
	})
	elapsed := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("drover enqueue: %w", err)
	}
	b, err := d.store.Log().Backlog(ctx, q, 0)
	if err != nil {
		return 0, err
	}
	if b.Lag != int64(n) {
		return 0, fmt.Errorf("drover enqueue: want %d messages in the log, have %d", n, b.Lag)
	}
	return elapsed, nil
}

// prepare implements system.
func (d *droverSystem) prepare(ctx context.Context, kind taskKind, n int) error {
	q := d.nextQueue("process-" + string(kind))
	last, err := d.preEnqueue(ctx, q, kind, n)
	if err != nil {
		return err
	}
	d.prepared = preparedQueue{name: q, last: last}
	return nil
}

// process implements system. Done means: the worker's committed offset (a
// fenced ZooKeeper commit) covers the last message.
func (d *droverSystem) process(ctx context.Context, kind taskKind, n, concurrency int) (time.Duration, error) {
	q, last := d.prepared.name, d.prepared.last
	if q == "" {
		return 0, fmt.Errorf("drover: process without prepare")
	}
	d.prepared = preparedQueue{}
	route := drover.TaskRoute{Inline: true}
	switch kind {
	case kindTrue:
		route = drover.TaskRoute{Command: []string{"/bin/true"}}
	case kindGoChild:
		route = drover.TaskRoute{Go: true}
	case kindGoPool:
		route = drover.TaskRoute{Go: true, Pool: &drover.PoolConfig{MaxTasksPerChild: 1000}}
	}
	qc := drover.QueueConfig{Name: q, Concurrency: concurrency, Tasks: map[string]drover.TaskRoute{"*": route}}
	handled := newCounter(n)
	inlineHandled.Store(handled)
	defer inlineHandled.Store(nil)

	zc, err := d.zk.Claims().Claim(ctx, q, coordinator.Owner{Member: "bench"})
	if err != nil {
		return 0, err
	}
	claim := newWatchedClaim(zc, last)
	w, err := worker.New(worker.Config{
		Member: "bench", Capacity: concurrency,
		Store: d.store.Log(), Executor: d.exec,
	})
	if err != nil {
		return 0, err
	}
	wctx, stopWakeups := context.WithCancel(ctx)
	defer stopWakeups()
	wakeups, err := d.store.Listener().Wakeups(wctx, "bench")
	if err != nil {
		return 0, err
	}
	if err := d.store.Log().RouteWakeups(ctx, "bench", qc.Name); err != nil {
		return 0, err
	}
	go func() {
		for wk := range wakeups {
			if wk.Queue != "" {
				w.Wake(wk.Queue)
			}
		}
	}()

	start := time.Now()
	if err := w.Start(qc, claim); err != nil {
		return 0, err
	}
	var elapsed time.Duration
	select {
	case <-claim.done:
		elapsed = time.Since(start)
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(processTimeout):
		return 0, fmt.Errorf("drover %s: offset not at the last message after %s", kind, processTimeout)
	}
	claim.mu.Lock()
	d.lastCommitWait = claim.inCommit
	claim.mu.Unlock()
	if err := w.Stop(ctx, q, drover.StopLeave); err != nil {
		return 0, fmt.Errorf("drover: stop queue: %w", err)
	}
	if po, ok := d.exec.(executor.PoolOwner); ok {
		po.ReleaseQueue(q) // Stop did already; the next run starts cold either way
	}
	b, err := d.store.Log().Backlog(ctx, q, last)
	if err != nil {
		return 0, err
	}
	if b.Dead != 0 || b.Delayed != 0 {
		return 0, fmt.Errorf("drover %s: %d dead letters and %d retries, want none", kind, b.Dead, b.Delayed)
	}
	if kind == kindNoop && handled.seen.Load() != int64(n) {
		return 0, fmt.Errorf("drover noop: handler ran %d times for %d messages", handled.seen.Load(), n)
	}
	return elapsed, nil
}

// preparedQueue is a queue filled by prepare.
type preparedQueue struct {
	name string
	last drover.Position
}

// processTimeout bounds one processing run.
const processTimeout = 5 * time.Minute

// preEnqueue fills q with n messages in batches and returns the last
// position.
func (d *droverSystem) preEnqueue(ctx context.Context, q string, kind taskKind, n int) (drover.Position, error) {
	var last drover.Position
	const batch = 1000
	for i := 0; i < n; i += batch {
		msgs := make([]*drover.Message, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			msgs = append(msgs, d.message(q, kind, j))
		}
		res, err := d.store.Producer().EnqueueBatch(ctx, msgs)
		if err != nil {
			return 0, fmt.Errorf("drover: pre-enqueue: %w", err)
		}
		last = res[len(res)-1].Position
	}
	return last, nil
}
