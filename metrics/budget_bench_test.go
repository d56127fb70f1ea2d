package metrics_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/drover-dev/drover/metrics"
)

// BenchmarkScrapeManyQueues is the metrics budget measured: one worker's
// /metrics (the Registry's handler with the binary's sinks, Prometheus and
// the in-memory dump) after queues=N queues each ran 3 tasks in the last
// hour and published their backlog gauges, as worker.Worker records them
// (worker/task.go, commit.go, backlog.go: the same Recorder calls, made
// here directly rather than through subprocesses). The queue names have no
// ':' and match no pattern, the worst case: every queue would be its own
// group, so metrics.max_groups (50) is reached. Each op is one scrape;
// series is the drover_* samples, all-series every sample (go_*,
// process_* too), bytes the uncompressed body.
func BenchmarkScrapeManyQueues(b *testing.B) {
	for _, n := range []int{1000, 10000, 25000} {
		b.Run(fmt.Sprintf("queues=%d", n), func(b *testing.B) {
			r, err := metrics.Setup(metrics.SetupConfig{Prometheus: true, Inmem: true, InmemRetain: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			task := metrics.L("task", "send")
			for i := range n {
				q := metrics.L("queue", fmt.Sprintf("q-%05d", i))
				for range 3 {
					oneTask(r, q, task, metrics.L("outcome", "success"))
				}
				r.IncrCounter(metrics.CommitsTotal, 1, q)
				r.SetGauge(metrics.Lag, float32(i%50), q)
				r.SetGauge(metrics.OldestAge, float32(i%600), q)
				r.SetGauge(metrics.Delayed, 0, q)
				r.SetGauge(metrics.Dead, float32(i%3), q)
			}
			h := r.Handler()
			var body []byte
			b.ResetTimer()
			for range b.N {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("scrape: %d", rec.Code)
				}
				body = rec.Body.Bytes()
			}
			b.StopTimer()
			drover, all := 0, 0
			for _, line := range bytes.Split(body, []byte("\n")) {
				if len(line) == 0 || line[0] == '#' {
					continue
				}
				all++
				if bytes.HasPrefix(line, []byte("drover_")) {
					drover++
				}
			}
			b.ReportMetric(float64(drover), "series")
			b.ReportMetric(float64(all), "all-series")
			b.ReportMetric(float64(len(body)), "bytes")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/scrape")
		})
	}
}
