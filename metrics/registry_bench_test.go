package metrics_test

import (
	"testing"

	"github.com/drover-dev/drover/metrics"
)

// BenchmarkRecordTaskOutcome is the cost a worker pays per finished task:
// one sample and one counter with three labels, into the Prometheus and
// in-memory sinks.
func BenchmarkRecordTaskOutcome(b *testing.B) {
	r, err := metrics.Setup(metrics.SetupConfig{Prometheus: true, Inmem: true})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	q, task, ok := metrics.L("queue", "emails"), metrics.L("task", "send"), metrics.L("outcome", "success")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.AddSample(metrics.TaskDuration, 12, q, task)
			r.IncrCounter(metrics.TasksTotal, 1, q, task, ok)
		}
	})
}
