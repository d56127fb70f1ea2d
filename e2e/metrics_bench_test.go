package e2e

import (
	"testing"

	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/worker"
)

// BenchmarkRuntimeInlineMetrics is BenchmarkRuntimeInline with the metrics
// sinks `drover worker` sets up (Prometheus and the in-memory dump), where
// BenchmarkRuntimeInline records into metrics.Discard: the difference is
// what the per-task metrics cost the worker.
func BenchmarkRuntimeInlineMetrics(b *testing.B) {
	reg, err := metrics.Setup(metrics.SetupConfig{Prometheus: true, Inmem: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(reg.Close)
	benchInline(b, func(c *worker.Config) { c.Metrics = reg })
}
