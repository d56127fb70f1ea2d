package fleetbench

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/proxy"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// BenchmarkQueueFamilies measures issue 31's queue families on real worker
// processes (docs/benchmarks.md, "Queue families"): a private ZooKeeper and
// Redis, Workers `drover worker` processes (each through a counting
// ZooKeeper proxy), one family (prefix "f-", bench.stamp inline); then
// producers enqueue one message into each of Queues names never seen
// before, at Rate new queues a second (open loop: EnqueueBatch every 10 ms
// of what has come due). The first message of a queue is its first task:
// the workers' bench.stamp histograms give first enqueue → first task start.
// ZooKeeper writes are every worker's write requests (and the ops inside
// multis) from the first enqueue until every queue ran, per new queue: the
// registrations, the assignments, the claims and the first commits.
//
// Once every queue ran, the fleet is left alone until every worker is
// quiet, then measured idle for one window, as the Fleet runtime section
// measures its 100,000 created queues: the idle figures with 100,000
// queues that exist only by their first enqueue, and the goroutines per
// worker against the same worker before the first enqueue.
//
//	DROVER_FAMILYBENCH_QUEUES       new queues (100,000)
//	DROVER_FAMILYBENCH_RATE         new queues a second (1,000)
//	DROVER_FAMILYBENCH_WORKERS      worker processes (4)
//	DROVER_FAMILYBENCH_IDLE_WINDOW  the idle window (30s; 0s: no idle phase)
func BenchmarkQueueFamilies(b *testing.B) {
	queues, rate, workers := envInt("DROVER_FAMILYBENCH_QUEUES", 100000), envInt("DROVER_FAMILYBENCH_RATE", 1000), envInt("DROVER_FAMILYBENCH_WORKERS", 4)
	for i := 0; i < b.N; i++ {
		runFamilies(b, queues, rate, workers)
	}
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

func runFamilies(b *testing.B, queues, rate, workers int) {
	bin := buildDrover(b)
	zkServer := testenv.NewZooKeeper(b)
	redisServer := testenv.NewRedis(b, testenv.RedisOptions{})
	root, prefix := testenv.Chroot(b), testenv.Prefix(b)
	dir := b.TempDir()
	ctx := context.Background()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	s, err := coordinator.Connect(cctx, coordinator.Config{Servers: zkServer.Addrs, Root: root, SessionTimeout: 30 * time.Second})
	cancel()
	if err != nil {
		b.Fatalf("connect to zookeeper: %v", err)
	}
	b.Cleanup(func() { s.Close() })
	fam := drover.FamilyConfig{Name: "bench", Prefix: "f-",
		Queue: drover.QueueConfig{Concurrency: 1, Tasks: map[string]drover.TaskRoute{"bench.stamp": {Inline: true}}}}
	if err := s.Families().Create(ctx, fam); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(),
		"DROVER_ZOOKEEPER_ROOT="+root,
		"DROVER_REDIS_ADDRS="+redisServer.Addr,
		"DROVER_REDIS_PREFIX="+prefix,
		"DROVER_LOG_LEVEL="+logLevel(),
	)
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = startWorker(b, bin, dir, fmt.Sprintf("w%d", i+1), zkServer.Addrs[0], env)
	}
	waitConverged(b, s, ws, 0, time.Minute)
	time.Sleep(3 * time.Second) // the leader's registrar subscribes (a lost first wake-up waits for the scan)
	emptyG := make([]int, len(ws))
	for i, w := range ws {
		if emptyG[i], err = w.goroutines(); err != nil {
			b.Fatal(err)
		}
	}

	rdb := redis.NewClient(&redis.Options{Addr: redisServer.Addr, PoolSize: 16})
	b.Cleanup(func() { rdb.Close() })
	store, err := queue.New(queue.Config{Client: rdb, Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	zkBefore := zkCounts(ws)
	profiled := profileWorkers(b, ws, os.Getenv("DROVER_FLEETBENCH_PROFILES"), time.Duration(queues/rate)*time.Second)
	start := time.Now()
	sent := 0
	sentAt := make([]time.Time, queues) // when each name's first enqueue returned
	for sent < queues {
		due := min(queues, int(time.Since(start).Seconds()*float64(rate)))
		if due > sent {
			msgs := make([]*drover.Message, 0, due-sent)
			for i := sent; i < due; i++ {
				msgs = append(msgs, &drover.Message{Queue: fmt.Sprintf("f-%07d", i), Task: "bench.stamp"})
			}
			for lo := 0; lo < len(msgs); lo += 1000 {
				if _, err := store.Producer().EnqueueBatch(ctx, msgs[lo:min(lo+1000, len(msgs))]); err != nil {
					b.Fatal(err)
				}
			}
			now := time.Now()
			for i := sent; i < due; i++ {
				sentAt[i] = now
			}
			sent = due
		}
		time.Sleep(10 * time.Millisecond)
	}
	sendTook := time.Since(start)
	profiled()
	drain := waitDrained(b, ws, int64(queues), 10*time.Minute)
	if keep := os.Getenv("DROVER_FAMILYBENCH_KEEP_LOGS"); keep != "" {
		for _, w := range ws {
			data, err := os.ReadFile(w.logPath)
			b.Logf("keep %s: %d bytes (%v)", w.logPath, len(data), err)
			_ = os.WriteFile(filepath.Join(keep, w.name+".log"), data, 0o644)
		}
	}
	zk := zkCounts(ws).Sub(zkBefore)
	var lat Snapshot
	for _, w := range ws {
		l, err := ReadSnapshot(w.latPath)
		if err != nil {
			b.Fatal(err)
		}
		lat.Add(&l)
	}
	names, err := s.Queues().Names(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(workers), "workers")
	b.ReportMetric(float64(queues), "new-queues")
	b.ReportMetric(float64(rate), "new-queues/s-asked")
	b.ReportMetric(float64(queues)/sendTook.Seconds(), "new-queues/s-sent")
	b.ReportMetric(float64(len(names)), "registered")
	b.ReportMetric(100*float64(len(names))/float64(queues), "registered-%")
	b.ReportMetric(float64(lat.Total()), "first-tasks-started")
	b.ReportMetric(lat.Quantile(0.5).Seconds()*1000, "first-start-p50-ms")
	b.ReportMetric(lat.Quantile(0.99).Seconds()*1000, "first-start-p99-ms")
	b.ReportMetric(drain.Seconds(), "drain-after-last-s")
	b.ReportMetric(float64(zk.Writes)/float64(queues), "zk-write-requests/new-queue")
	b.ReportMetric(float64(zk.WriteOps)/float64(queues), "zk-write-ops/new-queue")
	b.Logf("ZooKeeper requests of the workers per new queue, by operation: %s", opRates(zk.ByOp, float64(queues)))
	familyStages(b, zkServer.Addrs, root, sentAt)
	familiesIdle(b, redisServer.Addr, ws, emptyG)
	b.Logf("%d new queues at %d/s (sent in %s): %d registered, %d first tasks started; p50 %s p99 %s; ZooKeeper %d write requests, %d write ops",
		queues, rate, sendTook.Round(time.Millisecond), len(names), lat.Total(), lat.Quantile(0.5), lat.Quantile(0.99), zk.Writes, zk.WriteOps)
}

// familiesIdle waits until every worker is quiet and measures one idle
// window of the fleet holding the family's queues (the Fleet runtime
// section's idle figures, prefixed "idle-"), and the goroutines per worker
// against emptyG, the same workers' before the first enqueue.
func familiesIdle(b *testing.B, redisAddr string, ws []*worker, emptyG []int) {
	window := 30 * time.Second
	if v := os.Getenv("DROVER_FAMILYBENCH_IDLE_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("DROVER_FAMILYBENCH_IDLE_WINDOW: %v", err)
		}
		window = d
	}
	if window <= 0 {
		return
	}
	mon := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 1})
	defer mon.Close()
	rm := &redisMeter{c: mon}
	settled := settle(ws, 10*time.Second, 60*time.Second, 2*idleCPUTarget)
	b.ReportMetric(settled.Seconds(), "settle-s")
	idle, _ := measure(b, rm, ws, window, nil, sample(b, rm, ws, nil))
	idle.figures("idle-").report(b)
	reportLiveHeaps(b, ws)
	growth := 0.0
	fullG := make([]int, len(ws))
	for i, w := range ws {
		g, err := w.goroutines()
		if err != nil {
			b.Fatal(err)
		}
		fullG[i] = g
		growth = max(growth, float64(g)/float64(emptyG[i]))
	}
	b.ReportMetric(float64(slices.Max(fullG)), "goroutines-full")
	b.ReportMetric(growth, "goroutines-full/empty")
	b.Logf("idle after %s quiet: %.0f Redis commands/s, %.2f%% CPU (busiest worker), %.1f MB RSS (largest worker); goroutines per worker %v before the first enqueue, %v now",
		settled.Round(time.Second), idle.redisCmdsPerS, idle.cpuPct, idle.rssMB, emptyG, fullG)
}

func zkCounts(ws []*worker) proxy.Counts {
	var c proxy.Counts
	for _, w := range ws {
		c = c.Add(w.zk.Counts())
	}
	return c
}

// familyStages reports where a new queue's first start went, from the
// ZooKeeper nodes its life created, for a sample of the queues: its config
// (the registrar's registration, /queues/<bucket>/<queue>) and its offset
// (created by its first claim, /offsets/<queue>), their ctime against the
// time the producer's first enqueue returned. The ctimes are the server's
// clock, on the same machine as the producer.
func familyStages(b *testing.B, servers []string, root string, sentAt []time.Time) {
	conn, _, err := zk.Connect(servers, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		b.Fatalf("connect to zookeeper: %v", err)
	}
	defer conn.Close()
	step := max(1, len(sentAt)/2000)
	var registered, claimed []time.Duration
	for i := 0; i < len(sentAt); i += step {
		q := fmt.Sprintf("f-%07d", i)
		h := fnv.New32a()
		h.Write([]byte(q))
		cfg := fmt.Sprintf("%s/queues/%03x/%s", root, h.Sum32()%1024, q)
		for _, n := range []struct {
			path string
			into *[]time.Duration
		}{{cfg, &registered}, {root + "/offsets/" + q, &claimed}} {
			ok, st, err := conn.Exists(n.path)
			if err != nil || !ok {
				b.Logf("stages: %s: exists %v, %v", n.path, ok, err)
				continue
			}
			*n.into = append(*n.into, time.UnixMilli(st.Ctime).Sub(sentAt[i]))
		}
	}
	q := func(ds []time.Duration, p float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		slices.Sort(ds)
		return ds[min(len(ds)-1, int(p*float64(len(ds))))]
	}
	b.ReportMetric(q(registered, 0.5).Seconds()*1000, "registered-p50-ms")
	b.ReportMetric(q(registered, 0.99).Seconds()*1000, "registered-p99-ms")
	b.ReportMetric(q(claimed, 0.5).Seconds()*1000, "claimed-p50-ms")
	b.ReportMetric(q(claimed, 0.99).Seconds()*1000, "claimed-p99-ms")
	b.Logf("stages of %d sampled queues, from the first enqueue: registered p50 %s p99 %s; claimed p50 %s p99 %s",
		len(claimed), q(registered, 0.5), q(registered, 0.99), q(claimed, 0.5), q(claimed, 0.99))
}

// profileWorkers saves a CPU profile of every worker over the next d
// (<worker>.cpu in dir, for go tool pprof) when dir is not empty; the
// returned func waits for them.
func profileWorkers(b *testing.B, ws []*worker, dir string, d time.Duration) (wait func()) {
	if dir == "" || d < time.Second {
		return func() {}
	}
	done := make(chan struct{}, len(ws))
	for _, w := range ws {
		go func() {
			defer func() { done <- struct{}{} }()
			resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", w.admin, int(d.Seconds())))
			if err != nil {
				b.Logf("%s cpu profile: %v", w.name, err)
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, w.name+".cpu"), body, 0o644)
			}
			if err != nil {
				b.Logf("%s cpu profile: %v", w.name, err)
			}
		}()
	}
	return func() {
		for range ws {
			<-done
		}
	}
}

// keepLogs copies each worker's log into dir (<worker>.log) when the
// benchmark ends, after the worker is killed, so that a run that fell
// behind can be read afterwards (DROVER_FLEETBENCH_PROFILES, with
// DROVER_FLEETBENCH_LOG_LEVEL for more than warnings).
func keepLogs(b *testing.B, ws []*worker, dir string) {
	if dir == "" {
		return
	}
	// Registered after the workers' own cleanups: runs before them, so it
	// kills each worker first (a second kill is harmless).
	b.Cleanup(func() {
		for _, w := range ws {
			w.cmd.Process.Kill()
			<-w.done
			data, err := os.ReadFile(w.logPath)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, w.name+".log"), data, 0o644)
			}
			if err != nil {
				b.Logf("%s log: %v", w.name, err)
			}
		}
	})
}

// dumpGoroutines saves every worker's goroutines, grouped by stack
// (/debug/pprof/goroutine?debug=1), into dir as <worker>.goroutine.<n>
// every interval until the returned stop is called: what a worker's
// goroutines wait on at the moment a window falls behind. Nothing when dir
// is empty.
func dumpGoroutines(b *testing.B, ws []*worker, dir string, every time.Duration) (stop func()) {
	if dir == "" || every <= 0 {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			for _, w := range ws {
				resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/goroutine?debug=1", w.admin))
				if err != nil {
					b.Logf("%s goroutines: %v", w.name, err)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s.goroutine.%d", w.name, n)), body, 0o644)
				}
				if err != nil {
					b.Logf("%s goroutines: %v", w.name, err)
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}
