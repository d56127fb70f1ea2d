package tracing_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/tracing"
	"github.com/drover-dev/drover/worker"
	"github.com/drover-dev/drover/worker/executor"
)

func init() {
	drover.Register("tracing-bench.noop", func(context.Context, *drover.Message) error { return nil })
}

// benchClaim records the committed position.
type benchClaim struct{ pos atomic.Int64 }

func (c *benchClaim) Offset() drover.Offset { return drover.Offset{} }
func (c *benchClaim) Commit(_ context.Context, off drover.Offset) error {
	c.pos.Store(int64(off.Position))
	return nil
}
func (c *benchClaim) Release(ctx context.Context, off drover.Offset) error { return c.Commit(ctx, off) }
func (c *benchClaim) Done() <-chan struct{}                                { return nil }
func (c *benchClaim) Err() error                                           { return nil }

// benchRig is a store and a worker on a real Redis, traced or not.
type benchRig struct {
	store *queue.Store
	w     *worker.Worker
	tp    *sdktrace.TracerProvider // nil: tracing off
}

func newBenchRig(b *testing.B, prefix string, traced bool, capacity int) *benchRig {
	b.Helper()
	r := &benchRig{}
	var tr *tracing.Tracer
	if traced {
		// 100% sampling, the SDK's batching processor, an exporter that
		// drops: the cost of the spans without a network.
		r.tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
			sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		b.Cleanup(func() { r.tp.Shutdown(context.Background()) })
		tr = tracing.New(r.tp)
	}
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(b).Addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Close() })
	if r.store, err = queue.New(queue.Config{Client: rdb, Prefix: prefix, Tracer: tr}); err != nil {
		b.Fatal(err)
	}
	ex, err := executor.New(executor.Config{})
	if err != nil {
		b.Fatal(err)
	}
	r.w, err = worker.New(worker.Config{Member: "bench", Capacity: capacity, BatchSize: 500,
		Store: r.store.Log(), Executor: ex, Tracer: tr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.w.AbortAll)
	return r
}

// run enqueues n messages to a fresh queue (under a producer span when
// traced, so every task continues a sampled trace) and returns the time
// from Start to the commit of the last one.
func (r *benchRig) run(b *testing.B, q, task string, route drover.TaskRoute, concurrency, n int) time.Duration {
	b.Helper()
	ctx := context.Background()
	if r.tp != nil {
		var span trace.Span
		ctx, span = r.tp.Tracer("bench").Start(ctx, "produce")
		defer span.End()
	}
	var last drover.Position
	for start := 0; start < n; start += 1000 {
		msgs := make([]*drover.Message, 0, 1000)
		for i := start; i < min(start+1000, n); i++ {
			msgs = append(msgs, &drover.Message{Queue: q, Task: task})
		}
		res, err := r.store.Producer().EnqueueBatch(ctx, msgs)
		if err != nil {
			b.Fatal(err)
		}
		last = res[len(res)-1].Position
	}
	claim := &benchClaim{}
	start := time.Now()
	if err := r.w.Start(drover.QueueConfig{Name: q, Concurrency: concurrency, Tasks: map[string]drover.TaskRoute{task: route}}, claim); err != nil {
		b.Fatal(err)
	}
	for claim.pos.Load() < int64(last) {
		time.Sleep(time.Millisecond)
	}
	d := time.Since(start)
	if err := r.w.Stop(ctx, q, drover.StopLeave); err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkTracingThroughput runs the same tasks with tracing off and on
// (100% sampling), alternating within each iteration so that both see the
// same machine: an inline no-op at concurrency 16 and /bin/true at 4.
func BenchmarkTracingThroughput(b *testing.B) {
	for _, c := range []struct {
		name        string
		task        string
		route       drover.TaskRoute
		concurrency int
		n           int
	}{
		{"inline", "tracing-bench.noop", drover.TaskRoute{Inline: true}, 16, 20000},
		{"true", "t", drover.TaskRoute{Command: []string{"/bin/true"}}, 4, 1000},
	} {
		b.Run(c.name, func(b *testing.B) {
			prefix := testenv.Prefix(b)
			off := newBenchRig(b, prefix, false, c.concurrency)
			on := newBenchRig(b, prefix, true, c.concurrency)
			off.run(b, "warm-off", c.task, c.route, c.concurrency, c.n/10) // warm up both paths
			on.run(b, "warm-on", c.task, c.route, c.concurrency, c.n/10)
			// Short alternating rounds: a neighbour's load on this shared
			// machine falls on both sides alike.
			const rounds = 4
			var dOff, dOn, cpuOff, cpuOn time.Duration
			for i := 0; i < b.N; i++ {
				for j := 0; j < rounds; j++ {
					c0 := cpuTime()
					dOff += off.run(b, fmt.Sprintf("off-%d-%d", i, j), c.task, c.route, c.concurrency, c.n/rounds)
					c1 := cpuTime()
					dOn += on.run(b, fmt.Sprintf("on-%d-%d", i, j), c.task, c.route, c.concurrency, c.n/rounds)
					cpuOff, cpuOn = cpuOff+c1-c0, cpuOn+cpuTime()-c1
				}
			}
			tasks := float64(c.n * b.N)
			b.ReportMetric(float64(cpuOff.Microseconds())/tasks, "off-cpu-µs/task")
			b.ReportMetric(float64(cpuOn.Microseconds())/tasks, "on-cpu-µs/task")
			b.ReportMetric(100*float64(cpuOn-cpuOff)/float64(cpuOff), "on-cpu-cost-%")
			offRate := float64(c.n*b.N) / dOff.Seconds()
			onRate := float64(c.n*b.N) / dOn.Seconds()
			b.ReportMetric(offRate, "off-tasks/s")
			b.ReportMetric(onRate, "on-tasks/s")
			b.ReportMetric(100*(offRate-onRate)/offRate, "on-cost-%")
			// What tracing off adds to a task, against the task's own time.
			b.ReportMetric(100*offHooksNs()/(1e9/offRate), "off-cost-%")
		})
	}
}

// offHooksNs is what tracing off adds to one task, in ns: every hook the
// enqueue, the worker and the executor call, on a nil Tracer (the median of
// five timings of a million tasks' hooks).
func offHooksNs() float64 {
	var off *tracing.Tracer
	ctx := context.Background()
	m := &drover.Message{Queue: "q", Task: "t", ID: "id"}
	h := map[string]string{}
	now := time.Now()
	const n = 1_000_000
	var runs []float64
	for r := 0; r < 5; r++ {
		start := time.Now()
		for i := 0; i < n; i++ {
			ectx, es := off.StartEnqueue(ctx, m)
			_ = off.Inject(ectx, h)
			es.End(nil)
			tctx, ts := off.StartTask(ctx, "q", m, now)
			_ = tracing.Env(tctx)
			ts.Attempt(0, "success", 0, "")
			ts.End()
		}
		runs = append(runs, float64(time.Since(start).Nanoseconds())/n)
	}
	slices.Sort(runs)
	return runs[2]
}

// cpuTime is the CPU time (user and system) of this process and its
// waited-for children so far: a cost that a busy neighbour on the machine
// does not inflate the way it inflates wall-clock throughput.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}
