package fleetbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/proxy"
	"github.com/drover-dev/drover/internal/testenv"
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
//	DROVER_FAMILYBENCH_QUEUES   new queues (100,000)
//	DROVER_FAMILYBENCH_RATE     new queues a second (1,000)
//	DROVER_FAMILYBENCH_WORKERS  worker processes (4)
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
	if err := s.CreateFamily(ctx, fam); err != nil {
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

	rdb := redis.NewClient(&redis.Options{Addr: redisServer.Addr, PoolSize: 16})
	b.Cleanup(func() { rdb.Close() })
	store, err := queue.New(queue.Config{Client: rdb, Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	zkBefore := zkCounts(ws)
	start := time.Now()
	sent := 0
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
			sent = due
		}
		time.Sleep(10 * time.Millisecond)
	}
	sendTook := time.Since(start)
	drain := waitDrained(b, ws, int64(queues), 10*time.Minute)
	if keep := os.Getenv("DROVER_FAMILYBENCH_KEEP_LOGS"); keep != "" {
		for _, w := range ws {
			data, _ := os.ReadFile(w.logPath)
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
	names, err := s.QueueNames(ctx)
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
	b.Logf("%d new queues at %d/s (sent in %s): %d registered, %d first tasks started; p50 %s p99 %s; ZooKeeper %d write requests, %d write ops",
		queues, rate, sendTook.Round(time.Millisecond), len(names), lat.Total(), lat.Quantile(0.5), lat.Quantile(0.99), zk.Writes, zk.WriteOps)
}

func zkCounts(ws []*worker) proxy.Counts {
	var c proxy.Counts
	for _, w := range ws {
		c = c.Add(w.zk.Counts())
	}
	return c
}
