package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/worker"
	"github.com/drover-dev/drover/worker/executor"
	"github.com/redis/go-redis/v9"
)

// The Node client against BullMQ (issue 44; tools/benchreport, "Node
// client against BullMQ"): clients/node/bench/bench.mjs times Drover's
// Client.enqueue and BullMQ's Queue.add, and a BullMQ Worker, inside one
// Node process each; the pooled Node children are timed here, run by an
// in-process worker (runtimeRig) on the same Redis.

// nodeNoop is the Drover handler of the no-op runs: an async no-op served
// by the pool module, pooled or one process per task.
const nodeNoop = `import { main } from "./dist/pool.js";
main({ "*": async () => {} });
`

// nodeBenchDir builds the Node client into a directory of this test run
// (the checkout's dist/ is left to the Node suite), laid out as the
// package is: dist/, scripts/ (linked), node_modules linked to
// clients/node/bench's, so that the client and BullMQ load one ioredis,
// and noop.mjs; bench.mjs will run against redisAddr. A missing node or
// npm install fails with the hint.
func newNodeBench(tb testing.TB, redisAddr string) nodeBench {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Fatalf("node is needed for the BullMQ comparison: apt-get install -y nodejs npm (or make deps): %v", err)
	}
	_, file, _, _ := runtime.Caller(0)
	client := filepath.Join(filepath.Dir(file), "..", "clients", "node")
	tsc := filepath.Join(client, "node_modules", "typescript", "bin", "tsc")
	benchModules := filepath.Join(client, "bench", "node_modules")
	for _, need := range []struct{ path, fix string }{
		{tsc, "(cd clients/node && npm ci)"},
		{filepath.Join(benchModules, "bullmq", "package.json"), "(cd clients/node/bench && npm ci)"},
	} {
		if _, err := os.Stat(need.path); err != nil {
			tb.Fatalf("the BullMQ comparison's Node packages are not installed: %s, or make deps: %v", need.fix, err)
		}
	}
	dir := tb.TempDir()
	if out, err := exec.Command(node, tsc, "-p", client, "--outDir", filepath.Join(dir, "dist")).CombinedOutput(); err != nil {
		tb.Fatalf("build the Node client (tsc): %v\n%s", err, out)
	}
	for link, target := range map[string]string{"scripts": filepath.Join(client, "scripts"), "node_modules": benchModules} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			tb.Fatal(err)
		}
	}
	for name, body := range map[string]string{"package.json": `{"type": "module"}`, "noop.mjs": nodeNoop} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return nodeBench{node: node, dir: dir, bench: filepath.Join(client, "bench", "bench.mjs"),
		redis: redisAddr, prefix: testenv.Prefix(tb)}
}

// nodeBench is the built client beside clients/node/bench/bench.mjs.
type nodeBench struct {
	node, dir, bench string
	redis            string // host:port
	prefix           string // Drover's; BullMQ's is "bull-" + prefix
}

// noop is the path of the no-op handler program.
func (nb nodeBench) noop() string { return filepath.Join(nb.dir, "noop.mjs") }

// nodeFigures is one bench.mjs run's output.
type nodeFigures struct {
	N        int     `json:"n"`
	Elapsed  float64 `json:"elapsed_s"`
	CPU      float64 `json:"cpu_s"`
	RedisCPU float64 `json:"redis_cpu_s"`
	// ChildCPU is the part of CPU spent by the pooled children (Drover).
	ChildCPU float64 `json:"-"`
}

func (f *nodeFigures) add(g nodeFigures) {
	f.N += g.N
	f.Elapsed += g.Elapsed
	f.CPU += g.CPU
	f.RedisCPU += g.RedisCPU
	f.ChildCPU += g.ChildCPU
}

// run runs bench.mjs with args, queue a fresh name for this run and env
// added to the environment, and returns its figures.
func (nb nodeBench) run(tb testing.TB, queue string, env []string, args ...string) nodeFigures {
	tb.Helper()
	cmd := exec.Command(nb.node, append([]string{nb.bench}, args...)...)
	cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+nb.redis+"/0", "BENCH_QUEUE="+queue,
		"DROVER_PREFIX="+nb.prefix, "BULLMQ_PREFIX=bull-"+nb.prefix, "DROVER_DIST="+filepath.Join(nb.dir, "dist"))
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("node bench.mjs %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var f nodeFigures
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &f); err != nil || f.N == 0 || f.Elapsed <= 0 {
		tb.Fatalf("node bench.mjs %s: want a line of figures, have %q (%v)", strings.Join(args, " "), out, err)
	}
	return f
}

// redisCPU is the Redis server's CPU seconds so far (INFO cpu: user +
// system of all its threads).
func redisCPU(tb testing.TB, probe testenv.RedisProbe) float64 {
	tb.Helper()
	info, err := probe.Info(context.Background(), "cpu")
	if err != nil {
		tb.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("INFO cpu %s: %q", k, v)
			}
			sum += f
		}
	}
	return sum
}

// childrenCPU is the CPU time of this process's children running program
// (read from /proc while they live) plus that of every child reaped so far
// (RUSAGE_CHILDREN): the difference of two readings is what the children
// spent between them, counting those that exited in between.
func childrenCPU(tb testing.TB, program string) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	procs, _ := filepath.Glob("/proc/[0-9]*")
	self := strconv.Itoa(os.Getpid())
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), program) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue // exited since the listing: counted in RUSAGE_CHILDREN once reaped
		}
		// Fields after the command's closing parenthesis: state is field 3,
		// ppid 4, utime 14 and stime 15 (proc(5)).
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 || f[1] != self {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * time.Second / 100 // USER_HZ: 100 on Linux
	}
	return total
}

// BenchmarkNodeVsBullMQ: the comparison, each pair in the same
// run, in the order A B B A so that a drift of the machine's load falls on
// both. enqueue/callers=N: Drover's Client.enqueue against BullMQ's
// Queue.add from one Node process with N concurrent callers. noop: an async
// no-op handler at concurrency 16, Drover's pooled Node children (an
// in-process worker, capacity 16, the pool's default settings, children
// started and their code compiled by 16,000 tasks first) against a BullMQ
// Worker at concurrency 16 on jobs added beforehand, timed from its
// 1,000th job; the Drover time runs to the committed offset.
// pertask: the same handler, one Node process per task.
func BenchmarkNodeVsBullMQ(b *testing.B) {
	srv := testenv.Redis(b)
	probe := testenv.NewRedisProbe(b, srv.Addr)
	nb := newNodeBench(b, srv.Addr)
	for _, callers := range []int{1, 8} {
		b.Run(fmt.Sprintf("enqueue/callers=%d", callers), func(b *testing.B) {
			n := 5000 * callers / 4
			if callers == 1 {
				n = 5000
			}
			var drv, bull nodeFigures
			for i := 0; i < b.N; i++ {
				for j, system := range []string{"drover", "bullmq", "bullmq", "drover"} {
					f := nb.run(b, fmt.Sprintf("enq-%d-%d-%d", callers, i, j), nil,
						"enqueue", system, strconv.Itoa(callers), strconv.Itoa(n))
					if system == "drover" {
						drv.add(f)
					} else {
						bull.add(f)
					}
				}
			}
			reportPair(b, "msg", drv, bull)
		})
	}
	b.Run("noop/concurrency=16", func(b *testing.B) {
		const n, concurrency = 5000, 16
		program := nb.noop()
		route := drover.TaskRoute{Command: []string{nb.node, program}, Pool: &drover.PoolConfig{}}
		r := newPoolRig(b, concurrency)
		r.keepPool(b, "noop-warm", "noop", route, concurrency, concurrency*1000)
		var drv, bull nodeFigures
		for i := 0; i < b.N; i++ {
			for j, system := range []string{"drover", "bullmq", "bullmq", "drover"} {
				queue := fmt.Sprintf("noop-%d-%d", i, j)
				if system == "bullmq" {
					bull.add(nb.run(b, queue, nil, "bullmq-worker", strconv.Itoa(concurrency), strconv.Itoa(n)))
					continue
				}
				c0, r0 := childrenCPU(b, program), redisCPU(b, probe)
				d := r.runTask(b, queue, "noop", route, concurrency, n)
				children := childrenCPU(b, program) - c0
				drv.add(nodeFigures{N: n, Elapsed: d.Seconds(), CPU: (r.lastCPU + children).Seconds(),
					ChildCPU: children.Seconds(), RedisCPU: redisCPU(b, probe) - r0})
			}
		}
		reportPair(b, "task", drv, bull)
		b.ReportMetric(drv.ChildCPU*1e6/float64(drv.N), "drover-children-cpu-µs/task")
	})
	b.Run("pertask/concurrency=16", func(b *testing.B) {
		const n, concurrency = 100, 16
		route := drover.TaskRoute{Command: []string{nb.node, nb.noop()}}
		r := newPoolRig(b, concurrency)
		var d time.Duration
		for i := 0; i < b.N; i++ {
			d += r.runTask(b, fmt.Sprintf("pertask-%d", i), "noop", route, concurrency, n)
		}
		b.ReportMetric(float64(n*b.N)/d.Seconds(), "drover-tasks/s")
		b.ReportMetric(0, "ns/op")
	})
}

// newPoolRig is a runtimeRig whose executor's pools are closed with it.
func newPoolRig(b *testing.B, capacity int) *runtimeRig {
	var ex executor.Executor
	r := newRuntimeRig(b, capacity, func(c *worker.Config) { ex = c.Executor })
	if po, ok := ex.(executor.PoolOwner); ok {
		b.Cleanup(po.Close)
	}
	return r
}

// keepPool runs n tasks of route on a queue it leaves running, so that
// the route's pool, which stops when no queue uses it (docs/process-pool.md),
// keeps its children warm for the queues that runQueue starts and stops.
func (r *runtimeRig) keepPool(b *testing.B, queueName, task string, route drover.TaskRoute, concurrency, n int) {
	b.Helper()
	ctx := context.Background()
	msgs := make([]*drover.Message, n)
	for i := range msgs {
		msgs[i] = &drover.Message{Queue: queueName, Task: task}
	}
	res, err := r.store.Producer().EnqueueBatch(ctx, msgs)
	if err != nil {
		b.Fatal(err)
	}
	claim, err := r.s.Claims().Claim(ctx, queueName, coordinator.Owner{Member: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.store.Log().RouteWakeups(ctx, "bench", queueName); err != nil {
		b.Fatal(err)
	}
	qc := drover.QueueConfig{Name: queueName, Concurrency: concurrency, Tasks: map[string]drover.TaskRoute{task: route}}
	if err := r.w.Start(qc, claim); err != nil {
		b.Fatal(err)
	}
	for last := res[n-1].Position; queueDone(r.w, queueName) < last; {
		time.Sleep(5 * time.Millisecond)
	}
}

// reportPair reports a Drover and a BullMQ total per unit ("msg", "task"):
// the rates, their ratio, and CPU per unit of the Node (or worker and
// children) side and of Redis.
func reportPair(b *testing.B, unit string, drv, bull nodeFigures) {
	rate := func(f nodeFigures) float64 { return float64(f.N) / f.Elapsed }
	per := func(s float64, f nodeFigures) float64 { return s * 1e6 / float64(f.N) }
	b.ReportMetric(rate(drv), "drover-"+unit+"s/s")
	b.ReportMetric(rate(bull), "bullmq-"+unit+"s/s")
	b.ReportMetric(rate(drv)/rate(bull), "drover/bullmq")
	b.ReportMetric(per(drv.CPU, drv), "drover-cpu-µs/"+unit)
	b.ReportMetric(per(bull.CPU, bull), "bullmq-cpu-µs/"+unit)
	b.ReportMetric(per(drv.RedisCPU, drv), "drover-redis-µs/"+unit)
	b.ReportMetric(per(bull.RedisCPU, bull), "bullmq-redis-µs/"+unit)
	b.ReportMetric(0, "ns/op")
}

// TestNodeBenchSmoke runs BenchmarkNodeVsBullMQ's Node programs at a tiny
// size, so that a change to the client or to BullMQ that breaks them fails
// make test rather than the next make bench: each enqueue path writes its
// messages (counted in Redis, with the one that loads the scripts), the
// BullMQ worker completes its jobs, and noop.mjs runs a task per process.
func TestNodeBenchSmoke(t *testing.T) {
	srv := testenv.Redis(t)
	rdb := testenv.NewRedisProbe(t, srv.Addr).Client()
	nb := newNodeBench(t, srv.Addr)
	ctx := context.Background()
	const n, warm = 40, 5
	nb.run(t, "smoke-drover", nil, "enqueue", "drover", "8", strconv.Itoa(n))
	nb.run(t, "smoke-bullmq", nil, "enqueue", "bullmq", "8", strconv.Itoa(n))
	nb.run(t, "smoke-worker", []string{"BENCH_WARM=" + strconv.Itoa(warm)}, "bullmq-worker", "4", strconv.Itoa(n))
	counts := []struct {
		what string
		have *redis.IntCmd
		want int64
	}{
		{"Drover's log", rdb.ZCard(ctx, nb.prefix+":{smoke-drover}:log"), n + 1},
		{"BullMQ's wait list", rdb.LLen(ctx, "bull-"+nb.prefix+":smoke-bullmq:wait"), n + 1},
		{"BullMQ's completed jobs", rdb.ZCard(ctx, "bull-"+nb.prefix+":smoke-worker:completed"), n + warm},
	}
	for _, c := range counts {
		if v, err := c.have.Result(); err != nil || v != c.want {
			t.Errorf("%s: want %d, have %d (%v)", c.what, c.want, v, err)
		}
	}
	cmd := exec.Command(nb.node, nb.noop())
	cmd.Stdin = strings.NewReader(`{"id":"x","queue":"q","task":"noop","attempt":0}`)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("noop.mjs per task: want exit 0, have %v: %s", err, out)
	}
}
