package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// Per-queue rate limits (issue 31), measured in process on real Redis and
// real fenced ZooKeeper claims: queues limited to 5 messages/s each, with a
// backlog, run by one worker; the starts per queue over a window against
// the limit, and how soon a limit changed live takes effect.

// rateCounts counts the starts of the bench.rate handler per queue; the map
// is filled before the worker starts and only read after.
var rateCounts = map[string]*atomic.Int64{}

// liveStarts records the starts of the queue whose limit changes live.
var liveStarts struct {
	sync.Mutex
	at []time.Time
}

func init() {
	drover.Register("bench.rate", func(_ context.Context, m *drover.Message) error {
		if c := rateCounts[m.Queue]; c != nil {
			c.Add(1)
		}
		if m.Queue == "rl-live" {
			liveStarts.Lock()
			liveStarts.at = append(liveStarts.at, time.Now())
			liveStarts.Unlock()
		}
		return nil
	})
}

// envInt reads a size from the environment, for a quick run.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func BenchmarkRateLimit(b *testing.B) {
	queues := envInt("DROVER_RATEBENCH_QUEUES", 1000)
	window := time.Duration(envInt("DROVER_RATEBENCH_WINDOW", 60)) * time.Second
	const perSecond = 5
	// Burst 2 by default: a wake-up that comes late (a loaded machine)
	// catches up instead of losing its lateness from the interval, which
	// burst 1 does (the bucket holds one token); over the window the rate
	// can exceed the limit by at most burst/window.
	burst := envInt("DROVER_RATEBENCH_BURST", 2)
	backlog := int(window.Seconds())*perSecond + 100 // never runs dry in the window
	r := newRuntimeRig(b, 64)
	ctx := context.Background()
	route := map[string]drover.TaskRoute{"*": {Inline: true}}
	names := make([]string, queues)
	for i := range names {
		names[i] = fmt.Sprintf("rl-%04d", i)
		rateCounts[names[i]] = &atomic.Int64{}
	}
	for _, q := range append(names, "rl-live") {
		n := backlog
		if q == "rl-live" {
			n = 2000
		}
		for start := 0; start < n; start += 1000 {
			var msgs []*drover.Message
			for i := start; i < min(start+1000, n); i++ {
				msgs = append(msgs, &drover.Message{Queue: q, Task: "bench.rate"})
			}
			if _, err := r.store.Producer().EnqueueBatch(ctx, msgs); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	start := func(q string, rl drover.RateLimit) {
		claim, err := r.s.Claims().Claim(ctx, q, coordinator.Owner{Member: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.store.Log().RouteWakeups(ctx, "bench", q); err != nil {
			b.Fatal(err)
		}
		if err := r.w.Start(drover.QueueConfig{Name: q, Concurrency: 1, Tasks: route, RateLimit: rl}, claim); err != nil {
			b.Fatal(err)
		}
	}
	for _, q := range names {
		start(q, drover.RateLimit{PerSecond: perSecond, Burst: burst})
	}
	time.Sleep(3 * time.Second) // past the first tokens of every queue
	counts := func() []int64 {
		out := make([]int64, len(names))
		for i, q := range names {
			out[i] = rateCounts[q].Load()
		}
		return out
	}
	before, t0 := counts(), time.Now()
	time.Sleep(window)
	after, elapsed := counts(), time.Since(t0)
	worst, minRate, maxRate, sum := 0.0, math.Inf(1), 0.0, 0.0
	for i := range names {
		rate := float64(after[i]-before[i]) / elapsed.Seconds()
		worst = max(worst, math.Abs(rate-perSecond)/perSecond*100)
		minRate, maxRate, sum = min(minRate, rate), max(maxRate, rate), sum+rate
	}

	// A limit changed live: 1/s, then 50/s through Configure (the config
	// watch's path). It takes effect when starts come at the new rate: the
	// time from the change to the second start after it (at 1/s that is
	// up to 2 s; at 50/s, 20 ms after the first).
	start("rl-live", drover.RateLimit{PerSecond: 1, Burst: 1})
	time.Sleep(2500 * time.Millisecond)
	changed := time.Now()
	if err := r.w.Configure(drover.QueueConfig{Name: "rl-live", Concurrency: 1, Tasks: route, RateLimit: drover.RateLimit{PerSecond: 50, Burst: 1}}); err != nil {
		b.Fatal(err)
	}
	var live time.Duration
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		liveStarts.Lock()
		var after []time.Time
		for _, t := range liveStarts.at {
			if t.After(changed) {
				after = append(after, t)
			}
		}
		liveStarts.Unlock()
		if len(after) >= 2 {
			live = after[1].Sub(changed)
			break
		}
	}
	if live == 0 {
		b.Fatal("the live change: no two starts within 10 s of it")
	}
	b.StopTimer()
	b.ReportMetric(float64(queues), "queues")
	b.ReportMetric(float64(burst), "burst")
	b.ReportMetric(elapsed.Seconds(), "window-s")
	b.ReportMetric(sum/float64(queues), "mean-rate/s")
	b.ReportMetric(minRate, "min-rate/s")
	b.ReportMetric(maxRate, "max-rate/s")
	b.ReportMetric(worst, "max-rate-error-%")
	b.ReportMetric(live.Seconds(), "live-change-s")
	b.Logf("%d queues at %d/s over %s: mean %.3f/s, min %.3f, max %.3f, worst error %.2f%%; a live change took effect in %s",
		queues, perSecond, elapsed.Round(time.Millisecond), sum/float64(queues), minRate, maxRate, worst, live)
}
