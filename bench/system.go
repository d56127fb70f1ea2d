package main

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// A system is one task queue under test. Every method starts from an empty
// Redis (the caller flushes it between runs) and returns the timed part's
// duration; set-up (pre-enqueueing the tasks to process) is not timed.
type system interface {
	name() string
	// enqueue enqueues n tasks of the no-op kind from g goroutines, each
	// task one call of the system's ordinary single-task enqueue API.
	enqueue(ctx context.Context, n, g int) (time.Duration, error)
	// prepare enqueues n tasks of kind for the next process call.
	prepare(ctx context.Context, kind taskKind, n int) error
	// process starts processing the n prepared tasks at the given
	// concurrency and returns the time from start until the last one is
	// done.
	process(ctx context.Context, kind taskKind, n, concurrency int) (time.Duration, error)
	close()
}

// taskKind is what a task's handler does.
type taskKind string

const (
	kindNoop taskKind = "noop" // returns at once
	kindTrue taskKind = "true" // runs /bin/true
	// Drover only: the no-op Go handler in a re-executed child per task,
	// and in pooled children (max_tasks_per_child 1000).
	kindGoChild taskKind = "gochild"
	kindGoPool  taskKind = "gopool"
)

// payload is the task argument every system enqueues: a small JSON object.
func payload(i int) []byte { return []byte(fmt.Sprintf(`{"n":%d}`, i)) }

// fanOut runs f(i) for i in [0, n) on g goroutines and returns the first
// error.
func fanOut(ctx context.Context, n, g int, f func(i int) error) error {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(n)) // stop the others
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// runTrue is the peers' /bin/true handler: plain os/exec.
func runTrue() error { return exec.Command("/bin/true").Run() }

// spawnLoop is the physical ceiling of the /bin/true workload: n runs of
// /bin/true through os/exec from `concurrency` goroutines, no queue at all.
func spawnLoop(ctx context.Context, n, concurrency int) (time.Duration, error) {
	start := time.Now()
	err := fanOut(ctx, n, concurrency, func(int) error { return runTrue() })
	return time.Since(start), err
}

// counter counts handled tasks and closes done at the n-th.
type counter struct {
	n    int64
	seen atomic.Int64
	done chan struct{}
}

func newCounter(n int) *counter { return &counter{n: int64(n), done: make(chan struct{})} }

func (c *counter) add() {
	if c.seen.Add(1) == c.n {
		close(c.done)
	}
}

// wait waits for the n-th task, bounded by timeout.
func (c *counter) wait(ctx context.Context, timeout time.Duration) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(timeout):
		return fmt.Errorf("gave up after %s with %d of %d tasks handled", timeout, c.seen.Load(), c.n)
	}
}
