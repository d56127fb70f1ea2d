package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// Fairness (issue 31), measured only: one in-process worker kept at full
// capacity by one queue with a deep backlog, beside many light queues that
// each receive one message a second. The figure is the light queues'
// enqueue→start latency: how long a message of a quiet key waits behind a
// noisy one.

// fairHeavyTask is how long a task of the heavy queue holds its slot.
const fairHeavyTask = 20 * time.Millisecond

// fair collects the light queues' enqueue→start latencies while recording
// is on, and counts the heavy queue's starts.
var fair struct {
	sync.Mutex
	recording bool
	light     []time.Duration
	heavy     atomic.Int64
}

func init() {
	drover.Register("bench.fair.heavy", func(ctx context.Context, _ *drover.Message) error {
		fair.heavy.Add(1)
		t := time.NewTimer(fairHeavyTask)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	})
	drover.Register("bench.fair.light", func(_ context.Context, m *drover.Message) error {
		// The position is the enqueue time in µs by the Redis server's
		// clock: the same host's clock here.
		d := time.Since(time.UnixMicro(int64(m.Position)))
		fair.Lock()
		if fair.recording {
			fair.light = append(fair.light, d)
		}
		fair.Unlock()
		return nil
	})
}

func BenchmarkFairness(b *testing.B) {
	lightQueues := envInt("DROVER_FAIRBENCH_QUEUES", 1000)
	backlog := envInt("DROVER_FAIRBENCH_BACKLOG", 100000)
	window := time.Duration(envInt("DROVER_FAIRBENCH_WINDOW", 30)) * time.Second
	capacity := envInt("DROVER_FAIRBENCH_CAPACITY", 32)
	r := newRuntimeRig(b, capacity)
	ctx := context.Background()
	route := map[string]drover.TaskRoute{"*": {Inline: true}}

	for start := 0; start < backlog; start += 1000 {
		msgs := make([]*drover.Message, 0, 1000)
		for i := start; i < min(start+1000, backlog); i++ {
			msgs = append(msgs, &drover.Message{Queue: "fair-heavy", Task: "bench.fair.heavy"})
		}
		if _, err := r.store.EnqueueBatch(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	names := make([]string, lightQueues)
	for i := range names {
		names[i] = fmt.Sprintf("fair-%04d", i)
	}
	startQueue := func(q string, concurrency int) {
		claim, err := r.s.Claim(ctx, q, coordinator.Owner{Member: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.store.RouteWakeups(ctx, "bench", q); err != nil {
			b.Fatal(err)
		}
		if err := r.w.Start(drover.QueueConfig{Name: q, Concurrency: concurrency, Tasks: route}, claim); err != nil {
			b.Fatal(err)
		}
	}
	for _, q := range names {
		startQueue(q, 1)
	}
	b.ResetTimer()
	// The heavy queue may fill every slot of the worker.
	startQueue("fair-heavy", capacity)

	// Producers: every light queue gets one message a second, the queues
	// spread evenly over the second (1,000 queues: one enqueue a ms).
	pctx, stopProducers := context.WithCancel(ctx)
	var producers sync.WaitGroup
	const producerN = 8
	var enqueueErrs atomic.Int64
	for p := 0; p < producerN; p++ {
		producers.Add(1)
		go func(p int) {
			defer producers.Done()
			mine := names[p*len(names)/producerN : (p+1)*len(names)/producerN]
			gap := time.Second / time.Duration(max(1, len(mine)))
			next := time.Now().Add(time.Duration(p) * time.Second / producerN / time.Duration(max(1, len(mine))))
			for {
				for _, q := range mine {
					if d := time.Until(next); d > 0 {
						select {
						case <-time.After(d):
						case <-pctx.Done():
							return
						}
					}
					next = next.Add(gap)
					if _, err := r.store.Enqueue(pctx, &drover.Message{Queue: q, Task: "bench.fair.light"}); err != nil && pctx.Err() == nil {
						enqueueErrs.Add(1)
					}
				}
			}
		}(p)
	}
	time.Sleep(5 * time.Second) // warm-up: every light queue has had messages
	heavyBefore := fair.heavy.Load()
	fair.Lock()
	fair.recording = true
	fair.Unlock()
	t0 := time.Now()
	time.Sleep(window)
	fair.Lock()
	fair.recording = false
	lat := append([]time.Duration(nil), fair.light...)
	fair.Unlock()
	elapsed := time.Since(t0)
	heavyRate := float64(fair.heavy.Load()-heavyBefore) / elapsed.Seconds()
	stopProducers()
	producers.Wait()
	b.StopTimer()
	if len(lat) == 0 {
		b.Fatal("no light task started in the window")
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	inUse := heavyRate * fairHeavyTask.Seconds() // slots the heavy queue kept busy, on average
	b.ReportMetric(float64(lightQueues), "light-queues")
	b.ReportMetric(float64(backlog), "heavy-backlog")
	b.ReportMetric(float64(capacity), "capacity")
	b.ReportMetric(elapsed.Seconds(), "window-s")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "light-starts/s")
	b.ReportMetric(heavyRate, "heavy-starts/s")
	b.ReportMetric(inUse, "heavy-slots")
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(enqueueErrs.Load()), "enqueue-errors")
	b.Logf("%d light queues at 1/s beside a backlog of %d (capacity %d, heavy tasks %s): %d light starts in %s (%.0f/s), heavy %.0f/s (%.1f slots busy); light enqueue→start p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		lightQueues, backlog, capacity, fairHeavyTask, len(lat), elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(),
		heavyRate, inUse, q(0.5), q(0.99), float64(lat[len(lat)-1].Microseconds())/1000)
}
