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
	"github.com/drover-dev/drover/worker"
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
		if _, err := r.store.Producer().EnqueueBatch(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	names := make([]string, lightQueues)
	for i := range names {
		names[i] = fmt.Sprintf("fair-%04d", i)
	}
	startQueue := func(q string, concurrency int) {
		claim, err := r.s.Claims().Claim(ctx, q, coordinator.Owner{Member: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.store.Log().RouteWakeups(ctx, "bench", q); err != nil {
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
					if _, err := r.store.Producer().Enqueue(pctx, &drover.Message{Queue: q, Task: "bench.fair.light"}); err != nil && pctx.Err() == nil {
						enqueueErrs.Add(1)
					}
				}
			}
		}(p)
	}
	// measure records the light queues' latencies over the window, after a
	// warm-up, with the worker's stage counters before and after.
	type phase struct {
		lat           []time.Duration
		elapsed       time.Duration
		heavyRate     float64
		before, after *worker.Stages
	}
	measure := func() phase {
		time.Sleep(5 * time.Second) // warm-up
		var ph phase
		heavyBefore := fair.heavy.Load()
		ph.before = r.w.StateNames().Stages
		fair.Lock()
		fair.light, fair.recording = nil, true
		fair.Unlock()
		t0 := time.Now()
		time.Sleep(window)
		fair.Lock()
		fair.recording = false
		ph.lat = append([]time.Duration(nil), fair.light...)
		fair.Unlock()
		ph.elapsed = time.Since(t0)
		ph.after = r.w.StateNames().Stages
		ph.heavyRate = float64(fair.heavy.Load()-heavyBefore) / ph.elapsed.Seconds()
		if len(ph.lat) == 0 {
			b.Fatal("no light task started in the window")
		}
		sort.Slice(ph.lat, func(i, j int) bool { return ph.lat[i] < ph.lat[j] })
		return ph
	}
	q := func(lat []time.Duration, p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	meanMs := func(from, to worker.StageStat) float64 {
		if to.Count == from.Count {
			return 0
		}
		return (to.TotalMs - from.TotalMs) / float64(to.Count-from.Count)
	}
	// The light queues alone first: the same machine, producers and wake-up
	// path without the heavy queue, so that what the heavy queue adds is
	// the difference.
	alone := measure()
	// Then the heavy queue, which may fill every slot of the worker.
	startQueue("fair-heavy", capacity)
	loaded := measure()
	lat, elapsed, heavyRate := loaded.lat, loaded.elapsed, loaded.heavyRate
	stopProducers()
	producers.Wait()
	b.StopTimer()
	inUse := heavyRate * fairHeavyTask.Seconds() // slots the heavy queue kept busy, on average
	b.ReportMetric(float64(lightQueues), "light-queues")
	b.ReportMetric(float64(backlog), "heavy-backlog")
	b.ReportMetric(float64(capacity), "capacity")
	b.ReportMetric(elapsed.Seconds(), "window-s")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "light-starts/s")
	b.ReportMetric(heavyRate, "heavy-starts/s")
	b.ReportMetric(inUse, "heavy-slots")
	b.ReportMetric(q(lat, 0.50), "p50-ms")
	b.ReportMetric(q(lat, 0.99), "p99-ms")
	b.ReportMetric(q(alone.lat, 0.50), "alone-p50-ms")
	b.ReportMetric(q(alone.lat, 0.99), "alone-p99-ms")
	b.ReportMetric(meanMs(loaded.before.Wake, loaded.after.Wake), "wake-ms")
	b.ReportMetric(meanMs(loaded.before.ReadQueued, loaded.after.ReadQueued), "read-queued-ms")
	b.ReportMetric(meanMs(loaded.before.ReadTrip, loaded.after.ReadTrip), "read-trip-ms")
	b.ReportMetric(meanMs(alone.before.Wake, alone.after.Wake), "alone-wake-ms")
	b.ReportMetric(meanMs(alone.before.ReadQueued, alone.after.ReadQueued), "alone-read-queued-ms")
	b.ReportMetric(meanMs(alone.before.ReadTrip, alone.after.ReadTrip), "alone-read-trip-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(enqueueErrs.Load()), "enqueue-errors")
	b.Logf("%d light queues at 1/s beside a backlog of %d (capacity %d, heavy tasks %s): %d light starts in %s (%.0f/s), heavy %.0f/s (%.1f slots busy); light enqueue→start p50 %.1f ms, p99 %.1f ms, max %.1f ms (alone: p50 %.1f ms, p99 %.1f ms)",
		lightQueues, backlog, capacity, fairHeavyTask, len(lat), elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(),
		heavyRate, inUse, q(lat, 0.5), q(lat, 0.99), float64(lat[len(lat)-1].Microseconds())/1000, q(alone.lat, 0.5), q(alone.lat, 0.99))
}
