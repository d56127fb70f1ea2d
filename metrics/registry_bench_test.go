package metrics_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/drover-dev/drover/metrics"
)

// oneTask makes the metric calls a worker makes for one finished task
// (worker/task.go): the queue latency of a first attempt, the attempt's
// duration and the outcome counter.
func oneTask(r metrics.Recorder, q, task, ok metrics.Label) {
	r.AddSample(metrics.QueueLatency, 3, q)
	r.AddSample(metrics.TaskDuration, 12, q, task)
	r.IncrCounter(metrics.TasksTotal, 1, q, task, ok)
}

// benchRegistry is a Registry with cfg's sinks for one benchmark, which
// reports allocations.
func benchRegistry(b *testing.B, cfg metrics.SetupConfig) *metrics.Registry {
	b.Helper()
	r, err := metrics.Setup(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	b.ReportAllocs()
	return r
}

// BenchmarkTaskMetrics is the metrics cost a worker pays per task, with the
// sinks of `drover worker` (Prometheus and the in-memory dump) and with
// Prometheus alone. ns/op and allocs/op are per task.
func BenchmarkTaskMetrics(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  metrics.SetupConfig
	}{
		{"prometheus+inmem", metrics.SetupConfig{Prometheus: true, Inmem: true}},
		{"prometheus", metrics.SetupConfig{Prometheus: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := benchRegistry(b, bc.cfg)
			q, task, ok := metrics.L("queue", "emails"), metrics.L("task", "send"), metrics.L("outcome", "success")
			b.ResetTimer()
			for range b.N {
				oneTask(r, q, task, ok)
			}
		})
	}
}

// BenchmarkRecordTaskOutcome is BenchmarkTaskMetrics from several
// goroutines at once (the worker's task slots).
func BenchmarkRecordTaskOutcome(b *testing.B) {
	r := benchRegistry(b, metrics.SetupConfig{Prometheus: true, Inmem: true})
	q, task, ok := metrics.L("queue", "emails"), metrics.L("task", "send"), metrics.L("outcome", "success")
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			oneTask(r, q, task, ok)
		}
	})
}

// BenchmarkBusyQueueMemory is the heap a Prometheus-only Registry holds per
// busy queue: every per-task series of 2,000 queues (one task name each),
// each fed 200 tasks, then measured after a GC. Reported as bytes/queue.
func BenchmarkBusyQueueMemory(b *testing.B) {
	const queues, tasks = 2000, 200
	for range b.N {
		b.StopTimer()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		r, err := metrics.Setup(metrics.SetupConfig{Prometheus: true})
		if err != nil {
			b.Fatal(err)
		}
		task, ok := metrics.L("task", "send"), metrics.L("outcome", "success")
		for i := range queues {
			q := metrics.L("queue", fmt.Sprintf("q%d", i))
			for range tasks {
				oneTask(r, q, task, ok)
			}
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/queues, "bytes/queue")
		runtime.KeepAlive(r)
		r.Close()
		b.StartTimer()
	}
}

// BenchmarkBacklogGauges is what a busy queue's owner pays per backlog
// read (worker/loop.go publishBacklog): four per-queue gauges, with the
// sinks of `drover worker`.
func BenchmarkBacklogGauges(b *testing.B) {
	r := benchRegistry(b, metrics.SetupConfig{Prometheus: true, Inmem: true})
	q := metrics.L("queue", "emails")
	b.ResetTimer()
	for range b.N {
		r.SetGauge(metrics.Lag, 10, q)
		r.SetGauge(metrics.OldestAge, 1.5, q)
		r.SetGauge(metrics.Delayed, 0, q)
		r.SetGauge(metrics.Dead, 0, q)
	}
}
