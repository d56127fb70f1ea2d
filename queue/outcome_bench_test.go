package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// BenchmarkRecordOutcomes: writing outcome records in batches as the worker
// does after a commit (no trim work: the log is empty).
func BenchmarkRecordOutcomes(b *testing.B) {
	for _, batch := range []int{100, 10000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			recs := make([]drover.Outcome, batch)
			for i := range recs {
				recs[i] = drover.Outcome{ID: fmt.Sprintf("%026d", i), State: drover.JobSucceeded, Task: "bench.noop",
					FinishedAt: time.Now(), Duration: 0.000012, Member: "worker-1"}
			}
			keep := drover.Duration(time.Minute) // the buckets expire by themselves
			policy := drover.Outcomes{Max: 1 << 30, Retention: &keep}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				for j := range recs {
					recs[j].ID = fmt.Sprintf("%d-%d", i, j)
				}
				if _, err := s.TrimRecording(ctx, "bench", 0, 0, recs, policy); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "records/s")
			b.Cleanup(func() {
				k := s.keys.queue("bench")
				s.rdb.Del(context.Background(), k.done)
			})
		})
	}
}
