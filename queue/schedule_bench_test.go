package queue_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/scheduler"
	"github.com/redis/go-redis/v9"
)

// writeEntries stores n interval entries (every `every`) named <prefix>NNNNNN
// with the given score function, 1,000 per pipeline.
func writeEntries(b *testing.B, env *schedEnv, n int, namePrefix, queueName string, every time.Duration, score func(i int) float64) {
	b.Helper()
	ctx := context.Background()
	def := fmt.Sprintf(`{"queue":%q,"task":"t","schedule":{"type":"interval","every":%q}}`, queueName, every.String())
	for i := 0; i < n; i += 1000 {
		pipe := env.rdb.Pipeline()
		for j := i; j < min(i+1000, n); j++ {
			name := fmt.Sprintf("%s%06d", namePrefix, j)
			pipe.HSet(ctx, env.prefix+":sched:"+name, "definition", def)
			pipe.ZAdd(ctx, env.prefix+":schedule", redis.Z{Score: score(j), Member: name})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatalf("write entries: %v", err)
		}
	}
}

func redisUsedMemory(b *testing.B, rdb redis.UniversalClient) int64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatalf("INFO memory: %v", err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatalf("INFO memory has no used_memory")
	return 0
}

// BenchmarkScheduleStartup100k: 100,000 entries, 100 of them due. One op is
// a scheduler start-up: New plus the first Tick (which fires the due 100).
// Reports the time to the end of the first tick, the Go heap allocated by
// it, and the Redis memory the 100,000 entries take.
func BenchmarkScheduleStartup100k(b *testing.B) {
	ctx := context.Background()
	env := newSchedEnv(b, schedStandalone(b))
	const n, due = 100_000, 100
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	before := redisUsedMemory(b, env.rdb)
	// Entries every hour, not due for another 1–59 minutes, except `due`.
	writeEntries(b, env, n, "s", "startup", time.Hour, func(i int) float64 {
		return float64(now.Unix() + 60 + int64(i%59)*60)
	})
	redisPerEntry := float64(redisUsedMemory(b, env.rdb)-before) / n
	resetDue := func() {
		pipe := env.rdb.Pipeline()
		for i := 0; i < due; i++ {
			pipe.ZAdd(ctx, env.prefix+":schedule", redis.Z{Score: float64(now.Unix()), Member: fmt.Sprintf("s%06d", i)})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatalf("reset due entries: %v", err)
		}
	}
	enq := scheduler.EnqueuerFunc(func(ctx context.Context, m *drover.Message) (bool, error) {
		res, err := env.queue.Producer().Enqueue(ctx, m)
		return res.Duplicate, err
	})
	clock := newSetClock(now)
	var heap uint64
	var elapsed time.Duration
	var ms runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		resetDue()
		runtime.ReadMemStats(&ms)
		heapBefore := ms.TotalAlloc
		b.StartTimer()
		t0 := time.Now()
		s := newLoop(b, env.sched, enq, clock, scheduler.Config{})
		if _, err := s.Tick(ctx); err != nil {
			b.Fatalf("first tick: %v", err)
		}
		elapsed += time.Since(t0)
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		heap += ms.TotalAlloc - heapBefore
		b.StartTimer()
	}
	b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N), "ms/first-tick")
	b.ReportMetric(float64(heap)/float64(b.N), "heap-B/first-tick")
	b.ReportMetric(redisPerEntry, "redis-B/entry")
}

// BenchmarkScheduleFires: sustained fire rate of one leader into the real
// queue store. 1,000 entries fire every (fake) second; each op is one fire.
func BenchmarkScheduleFires(b *testing.B) {
	ctx := context.Background()
	env := newSchedEnv(b, schedStandalone(b))
	const n = 1000
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	writeEntries(b, env, n, "f", "fires", time.Second, func(int) float64 { return float64(now.Unix()) })
	var fired int64
	var mu sync.Mutex
	enq := scheduler.EnqueuerFunc(func(ctx context.Context, m *drover.Message) (bool, error) {
		res, err := env.queue.Producer().Enqueue(ctx, m)
		if err == nil && !res.Duplicate {
			mu.Lock()
			fired++
			mu.Unlock()
		}
		return res.Duplicate, err
	})
	clock := newSetClock(now)
	s := newLoop(b, env.sched, enq, clock, scheduler.Config{})
	b.ResetTimer()
	start := time.Now()
	for sec := 0; fired < int64(b.N); sec++ {
		clock.Set(now.Add(time.Duration(sec) * time.Second))
		if _, err := s.Tick(ctx); err != nil {
			b.Fatalf("tick: %v", err)
		}
	}
	b.ReportMetric(float64(fired)/time.Since(start).Seconds(), "fires/s")
}

// BenchmarkScheduleLateness1000: 1,000 entries every second on the real
// clock (1,000 fires/s, all due at each second boundary), one leader loop,
// the real queue store. Each op runs the loop for 3 seconds. Lateness is
// the time from a slot to the return of its enqueue.
func BenchmarkScheduleLateness1000(b *testing.B) {
	ctx := context.Background()
	env := newSchedEnv(b, schedStandalone(b))
	const n = 1000
	writeEntries(b, env, n, "l", "lateness", time.Second, func(int) float64 { return scheduler.ScorePlan })
	var mu sync.Mutex
	var lateness []time.Duration
	enq := scheduler.EnqueuerFunc(func(ctx context.Context, m *drover.Message) (bool, error) {
		res, err := env.queue.Producer().Enqueue(ctx, m)
		if err == nil && !res.Duplicate {
			late := time.Since(m.FireAt)
			mu.Lock()
			lateness = append(lateness, late)
			mu.Unlock()
		}
		return res.Duplicate, err
	})
	s := newLoop(b, env.sched, enq, drover.SystemClock{}, scheduler.Config{})
	// Plan every entry and let the first (immediate) fires pass.
	if _, err := s.Tick(ctx); err != nil {
		b.Fatalf("first tick: %v", err)
	}
	mu.Lock()
	lateness = lateness[:0]
	mu.Unlock()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if err := s.Run(runCtx); err != nil {
			b.Fatalf("run: %v", err)
		}
		cancel()
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	if len(lateness) == 0 {
		b.Fatalf("nothing fired")
	}
	sort.Slice(lateness, func(i, j int) bool { return lateness[i] < lateness[j] })
	pct := func(p float64) float64 {
		return float64(lateness[int(p*float64(len(lateness)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(lateness))/(3*float64(b.N)), "fires/s")
}
