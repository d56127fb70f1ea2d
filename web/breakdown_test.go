package web

import (
	"context"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// BenchmarkConsoleSnapshotParts10k times the parts of one fleet read at
// 10,000 queues: the ZooKeeper offset reads and the Redis backlog.
func BenchmarkConsoleSnapshotParts10k(b *testing.B) {
	f := setupBench(b)
	ctx := context.Background()
	names, err := f.zk.Queues().Names(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var zk, rd time.Duration
	for b.Loop() {
		start := time.Now()
		views, err := f.zk.Queues().Views(ctx, names, false)
		if err != nil {
			b.Fatal(err)
		}
		zk += time.Since(start)
		offsets := make([]drover.Position, len(views))
		for i, v := range views {
			offsets[i] = v.Offset.Position
		}
		start = time.Now()
		if _, err := f.store.Inspector().Stats(ctx, names, offsets); err != nil {
			b.Fatal(err)
		}
		rd += time.Since(start)
	}
	b.ReportMetric(float64(zk.Milliseconds())/float64(b.N), "zk-ms")
	b.ReportMetric(float64(rd.Milliseconds())/float64(b.N), "redis-ms")
	b.ReportMetric(0, "ns/op")
}
