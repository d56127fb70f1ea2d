//go:build droverbench

package main

// Handlers for the fleet runtime benchmark (tools/fleetbench), compiled
// only into a binary built with `-tags droverbench`; the drover binary that
// `make build` ships has no handlers of its own. Queues of the benchmark
// route these task names inline:
//
//   - bench.noop does nothing.
//   - bench.stamp counts the time from the message's enqueued_at to its
//     start in a histogram, which the worker writes to the file named by
//     DROVER_BENCH_LATENCY_FILE five times a second for the harness to read;
//     and, in a second histogram (that path plus ".stored"), the time from
//     its position (Redis TIME when the enqueue script stored it) to its
//     start: the worker's part alone, without the producer's batching.

import (
	"context"
	"os"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/tools/fleetbench"
)

var benchLatency, benchStored fleetbench.Histogram

func init() {
	drover.Register("bench.noop", func(context.Context, *drover.Message) error { return nil })
	drover.Register("bench.stamp", func(_ context.Context, m *drover.Message) error {
		benchLatency.Observe(time.Since(m.EnqueuedAt))
		benchStored.Observe(time.Since(time.UnixMicro(int64(m.Position))))
		return nil
	})
	if path := os.Getenv("DROVER_BENCH_LATENCY_FILE"); path != "" {
		go benchLatency.Publish(path, 200*time.Millisecond, nil) // lives as long as the process
		go benchStored.Publish(path+".stored", 200*time.Millisecond, nil)
	}
}
