package queue

import (
	"context"
	"testing"

	"github.com/drover-dev/drover"
)

// BenchmarkQueueHeads is one periodic backstop read of 25,000 parked
// queues' heads (a worker's share of 100,000 on four) on the real Redis.
func BenchmarkQueueHeads(b *testing.B) {
	s := benchStore(b)
	queues := setHeads(b, s, 25000)
	ctx := context.Background()
	heads := make([]drover.Position, 0, len(queues))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var err error
		if heads, err = s.Log().QueueHeads(ctx, queues, heads[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckQueues is one full backstop check of 25,000 parked queues
// (written once, processed, nothing delayed) on the real Redis.
func BenchmarkCheckQueues(b *testing.B) {
	s := benchStore(b)
	queues := setHeads(b, s, 25000)
	offsets := make([]drover.Position, len(queues))
	for i := range offsets {
		offsets[i] = drover.Position(1000 + i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.Log().CheckQueues(ctx, queues, offsets); err != nil {
			b.Fatal(err)
		}
	}
}
