package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/worker"
	"github.com/drover-dev/drover/worker/executor"
)

// The worker runtime's figures (issue "Worker runtime"), measured in process
// against real Redis and a real fenced ZooKeeper claim: enqueue N, start the
// queue, and time until the committed offset covers the last message.

func init() {
	drover.Register("bench.noop", func(context.Context, *drover.Message) error { return nil })
	drover.Register("bench.stamp", func(_ context.Context, m *drover.Message) error {
		stamps.record(m.ID, time.Now())
		return nil
	})
}

// stampLog records when the bench.stamp handler started each message.
type stampLog struct {
	sync.Mutex
	at map[string]time.Time
}

func (s *stampLog) record(id string, t time.Time) {
	s.Lock()
	s.at[id] = t
	s.Unlock()
}

var stamps = &stampLog{at: map[string]time.Time{}}

// runtimeRig is one in-process worker on real servers.
type runtimeRig struct {
	store *queue.Store
	s     *coordinator.Session
	w     *worker.Worker
	// lastDone is the last runQueue's time from Start to the worker's
	// completed position covering the last message (before its commit).
	lastDone time.Duration
	// lastCPU is the CPU time this process spent over the same span.
	lastCPU time.Duration
}

// queueDone is the contiguous completed position of a queue w runs.
func queueDone(w *worker.Worker, queue string) drover.Position {
	for _, q := range w.State().Queues {
		if q.Name == queue {
			return q.Done
		}
	}
	return 0
}

func newRuntimeRig(b *testing.B, capacity int, opts ...func(*worker.Config)) *runtimeRig {
	b.Helper()
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(b).Addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Close() })
	store, err := queue.New(queue.Config{Client: rdb, Prefix: testenv.Prefix(b)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: testenv.ZooKeeper(b).Addrs, Root: testenv.Chroot(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ex, err := executor.New(executor.Config{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := worker.Config{Member: "bench", Capacity: capacity, BatchSize: 500,
		Store: store.Log(), Executor: ex}
	for _, o := range opts {
		o(&cfg)
	}
	w, err := worker.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.AbortAll)
	wctx, stop := context.WithCancel(context.Background())
	b.Cleanup(stop)
	wake, err := store.Listener().Wakeups(wctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for wk := range wake {
			if wk.Queue != "" {
				w.Wake(wk.Queue)
			}
		}
	}()
	return &runtimeRig{store: store, s: s, w: w}
}

// selfCPU is this process's user and system CPU time so far (the worker's
// own cost; Redis, ZooKeeper and the task processes are other processes).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bareSpawn runs n × /bin/true with the given concurrency: the ceiling.
func bareSpawn(b *testing.B, n, concurrency int) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := exec.Command("/bin/true").Run(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkRuntimeTrue: end-to-end tasks/s of a /bin/true task against a
// bare spawn loop with the same concurrency, measured alternately in the
// same run.
func BenchmarkRuntimeTrue(b *testing.B) {
	const n, concurrency = 2000, 4
	r := newRuntimeRig(b, concurrency)
	var drv, done, bare, cpu time.Duration
	awaited0 := r.w.State().Stages.StartRecord.Count
	for i := 0; i < b.N; i++ {
		drv += r.runTask(b, fmt.Sprintf("true%d", i), "true", drover.TaskRoute{Command: []string{"/bin/true"}}, concurrency, n)
		done += r.lastDone
		cpu += r.lastCPU
		bare += bareSpawn(b, n, concurrency)
	}
	// Starts that waited for their record's round trip (worker.Stages).
	b.ReportMetric(float64(r.w.State().Stages.StartRecord.Count-awaited0)/float64(b.N), "awaited-starts/run")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-us/task")
	b.ReportMetric(float64(n*b.N)/drv.Seconds(), "tasks/s")
	b.ReportMetric(float64(n*b.N)/bare.Seconds(), "bare-tasks/s")
	b.ReportMetric(bare.Seconds()/drv.Seconds(), "ratio")
	b.ReportMetric(bare.Seconds()/done.Seconds(), "done-ratio")
	b.ReportMetric(float64((drv-done).Milliseconds())/float64(b.N), "commit-tail-ms")
}

// BenchmarkRuntimeGoChild: tasks/s of a registered Go handler run in a
// re-executed child of the binary.
func BenchmarkRuntimeGoChild(b *testing.B) {
	const n, concurrency = 500, 4
	r := newRuntimeRig(b, concurrency)
	var d time.Duration
	for i := 0; i < b.N; i++ {
		d += r.runTask(b, fmt.Sprintf("gochild%d", i), "bench.noop", drover.TaskRoute{Go: true}, concurrency, n)
	}
	b.ReportMetric(float64(n*b.N)/d.Seconds(), "tasks/s")
}

// BenchmarkRuntimeInline: tasks/s of an inline no-op handler.
func BenchmarkRuntimeInline(b *testing.B) { benchInline(b) }

// benchInline is BenchmarkRuntimeInline with the worker configured by opts.
func benchInline(b *testing.B, opts ...func(*worker.Config)) {
	const n, concurrency = 100000, 16
	r := newRuntimeRig(b, concurrency, opts...)
	var d, done, cpu time.Duration
	for i := 0; i < b.N; i++ {
		d += r.runTask(b, fmt.Sprintf("inline%d", i), "bench.noop", drover.TaskRoute{Inline: true}, concurrency, n)
		done += r.lastDone
		cpu += r.lastCPU
	}
	b.ReportMetric(float64(n*b.N)/d.Seconds(), "tasks/s")
	b.ReportMetric(float64(n*b.N)/done.Seconds(), "done-tasks/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-us/task")
	b.ReportMetric(float64((d-done).Milliseconds())/float64(b.N), "commit-tail-ms")
}

// runTask enqueues n messages of task into a fresh queue routed by route and
// returns how long the worker took from Start to the committed offset
// covering the last message.
func (r *runtimeRig) runTask(b *testing.B, queueName, task string, route drover.TaskRoute, concurrency, n int) time.Duration {
	b.Helper()
	return r.runQueue(b, drover.QueueConfig{Name: queueName, Concurrency: concurrency, Tasks: map[string]drover.TaskRoute{task: route}}, task, n)
}

// runQueue is runTask for a queue configured by qc (one route: task).
func (r *runtimeRig) runQueue(b *testing.B, qc drover.QueueConfig, task string, n int) time.Duration {
	b.Helper()
	queueName := qc.Name
	ctx := context.Background()
	var last drover.Position
	for start := 0; start < n; start += 1000 {
		var msgs []*drover.Message
		for i := start; i < min(start+1000, n); i++ {
			msgs = append(msgs, &drover.Message{Queue: queueName, Task: task})
		}
		res, err := r.store.Producer().EnqueueBatch(ctx, msgs)
		if err != nil {
			b.Fatal(err)
		}
		last = res[len(res)-1].Position
	}
	claim, err := r.s.Claims().Claim(ctx, queueName, coordinator.Owner{Member: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	start, cpu0 := time.Now(), selfCPU()
	if err := r.store.Log().RouteWakeups(context.Background(), "bench", qc.Name); err != nil {
		b.Fatal(err)
	}
	if err := r.w.Start(qc, claim); err != nil {
		b.Fatal(err)
	}
	// Done first (the worker's contiguous completed position, in memory),
	// then committed: the difference is the commit's tail, the wait for the
	// member's next coalesced commit (worker.Config.CommitInterval).
	for queueDone(r.w, queueName) < last {
		time.Sleep(2 * time.Millisecond)
	}
	r.lastDone = time.Since(start)
	r.lastCPU = selfCPU() - cpu0
	for claim.Offset().Position < last {
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(start)
	if err := r.w.Stop(ctx, queueName, drover.StopLeave); err != nil {
		b.Fatal(err)
	}
	return elapsed
}

// BenchmarkEnqueueToStart: latency from Enqueue returning to the handler
// starting, on an idle queue woken by the enqueue notification.
func BenchmarkEnqueueToStart(b *testing.B) {
	r := newRuntimeRig(b, 4)
	ctx := context.Background()
	q := "latency"
	claim, err := r.s.Claims().Claim(ctx, q, coordinator.Owner{Member: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.store.Log().RouteWakeups(context.Background(), "bench", q); err != nil {
		b.Fatal(err)
	}
	if err := r.w.Start(drover.QueueConfig{Name: q, Tasks: map[string]drover.TaskRoute{"bench.stamp": {Inline: true}}}, claim); err != nil {
		b.Fatal(err)
	}
	const samples = 200
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		for j := 0; j < samples; j++ {
			time.Sleep(20 * time.Millisecond) // let the queue go idle
			res, err := r.store.Producer().Enqueue(ctx, &drover.Message{Queue: q, Task: "bench.stamp"})
			if err != nil {
				b.Fatal(err)
			}
			sent := time.Now()
			for {
				stamps.Lock()
				at, ok := stamps.at[res.ID]
				stamps.Unlock()
				if ok {
					lat = append(lat, at.Sub(sent))
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkIdleQueuesRSS: resident memory of a `drover worker` process that
// owns 1,000 idle queues.
func BenchmarkIdleQueuesRSS(b *testing.B) {
	const queues = 1000
	for i := 0; i < b.N; i++ {
		f := newFleet(b, 10*time.Second)
		for q := 0; q < queues; q++ {
			f.createQueue(fmt.Sprintf("idle%04d", q), false, []string{"/bin/true"}, nil)
		}
		p := f.startWorker("idle") // default settings: the Prometheus sink on
		waitFor(b, 2*time.Minute, "the worker to own every queue", func() bool {
			st := f.state("idle")
			return st != nil && len(st.Worker.Queues) == queues
		})
		time.Sleep(3 * time.Second) // let start-up garbage be collected
		b.ReportMetric(float64(rssKB(b, p.cmd.Process.Pid))/1024, "rss-MB")
		f.killAll()
	}
}

// rssKB reads VmRSS of a process.
func rssKB(b *testing.B, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
