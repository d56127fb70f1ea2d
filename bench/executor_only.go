package main

import (
	"context"
	"fmt"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/worker/executor"
)

// executorLoop runs /bin/true n times through Drover's subprocess executor
// alone — no queue, no Redis, no ZooKeeper — from `concurrency` goroutines.
// Set against the bare spawn loop it isolates the executor's own cost;
// set against the full processing run, the queue loop's.
func executorLoop(ctx context.Context, exec executor.Executor, n, concurrency int) (time.Duration, error) {
	route := drover.TaskRoute{Command: []string{"/bin/true"}}
	start := time.Now()
	err := fanOut(ctx, n, concurrency, func(i int) error {
		m := &drover.Message{ID: fmt.Sprintf("m%d", i), Queue: "bench", Task: "bench-true", Args: payload(i), Position: drover.Position(i + 1)}
		env, err := m.MarshalJSON() // the queue loop hands over the stored envelope
		if err != nil {
			return err
		}
		res := exec.Execute(ctx, &executor.Task{Message: m, Envelope: env, Route: route, Timeout: time.Minute})
		if res.Outcome != executor.OutcomeSuccess {
			return fmt.Errorf("executor: %s: %s", res.Outcome, res.Reason)
		}
		return nil
	})
	return time.Since(start), err
}
