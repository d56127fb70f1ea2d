package fleetbench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testenv"
	"github.com/drover-dev/drover/internal/zkproxy"
	"github.com/drover-dev/drover/queue"
)

// BenchmarkFleetRuntime measures issue 14's runtime targets on real worker
// processes (docs/benchmarks.md, "Fleet runtime"):
//
//  1. A private ZooKeeper and Redis; SmallQueues queues registered in bulk;
//     Workers `drover worker` processes (the binary built with the
//     bench-only handlers) started, each through its own counting
//     ZooKeeper proxy; wait until together they run every queue.
//  2. Goroutines per worker at the small size.
//  3. The rest of Queues registered in bulk; wait until the fleet runs all
//     of them, then until every worker is quiet (under 10% of a core over
//     5 s), at least Settle and at most SettleMax.
//  4. Idle window: Redis commands/s of the whole fleet (INFO stats deltas,
//     the harness's own INFO calls subtracted), CPU per worker
//     (/proc/<pid>/stat), RSS per worker and of its children (the lease
//     supervisor), goroutines per worker.
//  5. Busy window: an open-loop producer sends Rate messages/s spread
//     evenly over BusyQueues queues (EnqueueBatch from four goroutines, each
//     batch carrying what has come due since its last one); the bench.stamp
//     handler counts enqueued_at → start per message in the worker.
//     Enqueue-to-start quantiles, whether the fleet keeps up, ZooKeeper
//     write requests per member (the proxies) and Redis PUBLISH calls per
//     message enqueued (INFO commandstats).
//
// Sizes come from the environment (sizes_test.go); with -benchtime 1x it
// runs once.
func BenchmarkFleetRuntime(b *testing.B) {
	sz, err := sizesFromEnv(os.Getenv)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		runFleet(b, sz)
	}
}

// idleCPUTarget is issue 14's idle CPU bound per worker (% of a core); the
// idle window starts once every worker is below twice that (see settle).
const idleCPUTarget = 5

// subWindows is how many parts a window is sampled in (for the worst part).
const subWindows = 6

func runFleet(b *testing.B, sz sizes) {
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
	// One client for the measurements (INFO): its commands are counted and
	// subtracted. The producer has its own.
	mon := redis.NewClient(&redis.Options{Addr: redisServer.Addr, PoolSize: 1})
	b.Cleanup(func() { mon.Close() })
	rm := &redisMeter{c: mon}

	b.ReportMetric(float64(sz.Workers), "workers")
	b.ReportMetric(float64(sz.SmallQueues), "small-queues")
	b.ReportMetric(float64(sz.Queues), "queues")
	b.ReportMetric(float64(sz.BusyQueues), "busy-queues")
	b.ReportMetric(float64(sz.Rate), "msgs/s-asked")
	b.ReportMetric(sz.Window.Seconds(), "window-s")

	// 1. The small fleet.
	if err := createQueues(ctx, s, 0, sz.SmallQueues); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(),
		"DROVER_ZOOKEEPER_ROOT="+root,
		"DROVER_REDIS_ADDRS="+redisServer.Addr,
		"DROVER_REDIS_PREFIX="+prefix,
		"DROVER_LOG_LEVEL="+logLevel(),
	)
	ws := make([]*worker, sz.Workers)
	for i := range ws {
		ws[i] = startWorker(b, bin, dir, fmt.Sprintf("w%d", i+1), zkServer.Addrs[0], env)
	}
	took := waitConverged(b, s, ws, sz.SmallQueues, sz.Converge)
	b.Logf("%d workers run %d queues after %s", sz.Workers, sz.SmallQueues, took.Round(time.Millisecond))
	time.Sleep(sz.Settle / 3)

	// 2. Goroutines at the small size.
	smallG := make([]int, len(ws))
	for i, w := range ws {
		if smallG[i], err = w.goroutines(); err != nil {
			b.Fatal(err)
		}
	}

	// 3. The full fleet.
	start := time.Now()
	if err := createQueues(ctx, s, sz.SmallQueues, sz.Queues); err != nil {
		b.Fatal(err)
	}
	b.Logf("registered %d more queues in %s", sz.Queues-sz.SmallQueues, time.Since(start).Round(time.Millisecond))
	took = waitConverged(b, s, ws, sz.Queues, sz.Converge)
	b.ReportMetric(took.Seconds(), "converge-s")
	settled := settle(ws, sz.Settle, sz.SettleMax, 2*idleCPUTarget)
	b.ReportMetric(settled.Seconds(), "settle-s")
	b.Logf("%d workers run %d queues after %s; measuring after %s more", sz.Workers, sz.Queues, took.Round(time.Millisecond), settled.Round(time.Millisecond))

	// 4. Idle.
	idle := measure(b, rm, ws, sz.Window, nil)
	fullG := make([]int, len(ws))
	for i, w := range ws {
		if fullG[i], err = w.goroutines(); err != nil {
			b.Fatal(err)
		}
	}
	idle.report(b, "idle-")
	// The live heap after the window, and the RSS beside it: how far
	// RSS runs above what the worker holds (the GC's headroom).
	heaps, rss := make([]string, len(ws)), make([]string, len(ws))
	mostHeap := int64(0)
	for i, w := range ws {
		h, err := w.liveHeap(os.Getenv("DROVER_FLEETBENCH_PROFILES"))
		if err != nil {
			b.Fatal(err)
		}
		r, err := RSS(w.pid())
		if err != nil {
			b.Fatal(err)
		}
		mostHeap = max(mostHeap, h)
		heaps[i], rss[i] = fmt.Sprintf("%.1f", float64(h)/(1<<20)), fmt.Sprintf("%.1f", float64(r)/(1<<20))
	}
	b.ReportMetric(float64(mostHeap)/(1<<20), "idle-live-heap-MB-max-worker")
	b.Logf("idle: live heap per worker (MB) %v, RSS after the window (MB) %v", heaps, rss)
	b.ReportMetric(float64(slices.Max(smallG)), "goroutines-small")
	b.ReportMetric(float64(slices.Max(fullG)), "goroutines-full")
	growth := 0.0
	for i := range ws {
		growth = max(growth, float64(fullG[i])/float64(smallG[i]))
	}
	b.ReportMetric(growth, "goroutines-full/small")
	b.Logf("goroutines per worker: %v at %d queues, %v at %d", smallG, sz.SmallQueues, fullG, sz.Queues)

	// 5. Busy.
	rdb := redis.NewClient(&redis.Options{Addr: redisServer.Addr, PoolSize: 16})
	b.Cleanup(func() { rdb.Close() })
	store, err := queue.New(queue.Config{Client: rdb, Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	p := newProducer(store, sz.BusyQueues, sz.Rate)
	p.start()
	defer p.stop()                              // after a failure
	time.Sleep(min(5*time.Second, sz.Window/4)) // the first wake-ups, buffers and connections
	st0, err := readStages(ws)
	if err != nil {
		b.Fatal(err)
	}
	busy := measure(b, rm, ws, sz.Window, p)
	st1, err := readStages(ws)
	if err != nil {
		b.Fatal(err)
	}
	p.stop()
	drain := waitDrained(b, ws, p.sent.Load(), 60*time.Second)
	if err := p.failure(); err != nil {
		b.Fatalf("producer: %v", err)
	}
	busy.report(b, "busy-")
	reportStages(b, st0, st1)
	b.ReportMetric(drain.Seconds(), "busy-drain-s")
	subs, err := maxSubscribers(ctx, mon)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(subs), "busy-max-subscribers")
	if busy.enqueued > 0 {
		b.ReportMetric(busy.redisCmdsPerS*busy.seconds/float64(busy.enqueued), "busy-redis-cmds/msg")
		b.ReportMetric(float64(busy.publishes)/float64(busy.enqueued), "busy-publish/msg")
		b.ReportMetric(float64(busy.publishes*int64(subs))/float64(busy.enqueued), "busy-deliveries/msg")
		b.ReportMetric(float64(busy.started)/float64(busy.enqueued), "busy-started/enqueued")
	}
	b.ReportMetric(float64(busy.enqueued)/busy.seconds/float64(sz.Rate), "busy-msgs/s-of-asked")
	if n := p.calls.Load(); n > 0 {
		// The producer's calls: a message's enqueued_at is set when its
		// batch is built, so a long call adds to its latency.
		b.ReportMetric(float64(p.sent.Load())/float64(n), "busy-producer-msgs/call")
		b.ReportMetric(float64(p.callNs.Load())/float64(n)/1e6, "busy-producer-call-ms")
	}
}

// createQueues registers queues q<from>…q<to-1> in bulk (multis of up to
// 512 KB), each routing bench.stamp and bench.noop inline.
func createQueues(ctx context.Context, s *coordinator.Session, from, to int) error {
	const chunk = 10000
	routes := map[string]drover.TaskRoute{"bench.stamp": {Inline: true}, "bench.noop": {Inline: true}}
	for lo := from; lo < to; lo += chunk {
		hi := min(lo+chunk, to)
		cfgs := make([]drover.QueueConfig, 0, hi-lo)
		for i := lo; i < hi; i++ {
			cfgs = append(cfgs, drover.QueueConfig{Name: queueName(i), Concurrency: 1, Tasks: routes})
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		n, err := s.CreateQueues(cctx, cfgs)
		cancel()
		if err != nil {
			return fmt.Errorf("register queues %d–%d: %w", lo, hi-1, err)
		}
		if n != hi-lo {
			return fmt.Errorf("register queues %d–%d: want %d created, have %d", lo, hi-1, hi-lo, n)
		}
	}
	return nil
}

func queueName(i int) string { return fmt.Sprintf("q%06d", i) }

// redisMeter reads the server's counters with INFO and knows how many
// commands it sent itself.
type redisMeter struct {
	c     *redis.Client
	calls int64 // INFO commands sent so far
}

type redisCounters struct {
	commands  int64 // total_commands_processed
	publishes int64 // PUBLISH and SPUBLISH calls, from scripts too (commandstats)
	calls     int64 // the meter's own commands before this reading
	byCommand map[string]int64
	cpu       float64 // used_cpu_user + used_cpu_sys of the server, seconds
}

func (m *redisMeter) read(ctx context.Context) (redisCounters, error) {
	rc := redisCounters{calls: m.calls, byCommand: map[string]int64{}}
	info, err := m.c.Info(ctx, "stats", "commandstats", "cpu").Result()
	m.calls++
	if err != nil {
		return rc, fmt.Errorf("redis INFO: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			rc.commands, _ = strconv.ParseInt(v, 10, 64)
		}
		for _, k := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				x, _ := strconv.ParseFloat(v, 64)
				rc.cpu += x
			}
		}
		if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			name, v, _ := strings.Cut(rest, ":")
			rc.byCommand[name] = statField(v, "calls")
			if name == "publish" || name == "spublish" {
				rc.publishes += statField(v, "calls")
			}
		}
	}
	return rc, nil
}

// statField reads key=N from a commandstats value "calls=3,usec=…".
func statField(v, key string) int64 {
	for _, kv := range strings.Split(v, ",") {
		if n, ok := strings.CutPrefix(kv, key+"="); ok {
			x, _ := strconv.ParseInt(n, 10, 64)
			return x
		}
	}
	return 0
}

// maxSubscribers is the most subscribers any Pub/Sub channel has (shard
// channels included): deliveries ≤ publishes × this.
func maxSubscribers(ctx context.Context, c *redis.Client) (int64, error) {
	var most int64
	for _, shard := range []bool{false, true} {
		var chans []string
		var err error
		if shard {
			chans, err = c.PubSubShardChannels(ctx, "*").Result()
		} else {
			chans, err = c.PubSubChannels(ctx, "*").Result()
		}
		if err != nil {
			return 0, fmt.Errorf("PUBSUB CHANNELS: %w", err)
		}
		if len(chans) == 0 {
			continue
		}
		var subs map[string]int64
		if shard {
			subs, err = c.PubSubShardNumSub(ctx, chans...).Result()
		} else {
			subs, err = c.PubSubNumSub(ctx, chans...).Result()
		}
		if err != nil {
			return 0, fmt.Errorf("PUBSUB NUMSUB: %w", err)
		}
		for _, n := range subs {
			most = max(most, n)
		}
	}
	return most, nil
}

// reading is everything sampled at one moment.
type reading struct {
	at       time.Time
	redis    redisCounters
	cpu      []time.Duration
	rss      []int64
	kidsRSS  []int64
	zk       []zkproxy.Counts
	latency  Snapshot // the workers' bench.stamp histograms, merged
	stored   Snapshot // the same from the messages' positions (stored in Redis → start)
	enqueued int64    // the producer's messages so far
}

func sample(b *testing.B, rm *redisMeter, ws []*worker, p *producer) reading {
	b.Helper()
	r := reading{at: time.Now()}
	var err error
	if r.redis, err = rm.read(context.Background()); err != nil {
		b.Fatal(err)
	}
	if p != nil {
		r.enqueued = p.sent.Load()
	}
	for _, w := range ws {
		cpu, err := CPUTime(w.pid())
		if err != nil {
			b.Fatalf("worker %s: %v", w.name, err)
		}
		rss, err := RSS(w.pid())
		if err != nil {
			b.Fatalf("worker %s: %v", w.name, err)
		}
		kids, _, err := w.childrenRSS()
		if err != nil {
			b.Fatalf("worker %s: %v", w.name, err)
		}
		r.cpu = append(r.cpu, cpu)
		r.rss = append(r.rss, rss)
		r.kidsRSS = append(r.kidsRSS, kids)
		r.zk = append(r.zk, w.zk.Counts())
		if p != nil {
			lat, err := ReadSnapshot(w.latPath)
			if err != nil {
				b.Fatal(err)
			}
			r.latency.Add(&lat)
			st, err := ReadSnapshot(w.latPath + ".stored")
			if err != nil {
				b.Fatal(err)
			}
			r.stored.Add(&st)
		}
	}
	return r
}

// window holds one measured window's figures.
type window struct {
	seconds        float64
	redisCmdsPerS  float64 // the whole window, the meter's own commands subtracted
	redisWorstPart float64 // the busiest sub-window
	redisCPUPct    float64 // the Redis server's CPU, % of one core over the window
	cpuPct         float64 // the busiest worker, % of one core over the window
	cpuWorstPart   float64 // the busiest worker in the busiest sub-window
	rssMB          float64 // the largest worker, largest sample
	kidsRSSMB      float64 // the largest children total of a worker
	zkWritesPerS   float64 // the member with the most write requests
	zkWriteOpsPerS float64 // the same member's writes, counting each op in a multi
	zkRequestsPerS float64 // the member with the most requests of any kind
	publishes      int64
	enqueued       int64
	started        int64
	latency        Snapshot
	stored         Snapshot
}

// measure samples every window/subWindows for window and returns the
// figures of the whole window.
func measure(b *testing.B, rm *redisMeter, ws []*worker, length time.Duration, p *producer) window {
	b.Helper()
	part := length / subWindows
	rs := []reading{sample(b, rm, ws, p)}
	for i := 0; i < subWindows; i++ {
		time.Sleep(time.Until(rs[0].at.Add(time.Duration(i+1) * part)))
		rs = append(rs, sample(b, rm, ws, p))
		for _, w := range ws {
			if w.exited() {
				b.Fatalf("worker %s exited during the window (see its log)", w.name)
			}
		}
	}
	first, last := rs[0], rs[len(rs)-1]
	w := window{seconds: last.at.Sub(first.at).Seconds()}
	cmds := func(a, z reading) float64 {
		// INFO counts a command after running it: a reading includes the
		// meter's commands sent before it, not itself.
		return float64((z.redis.commands - a.redis.commands) - (z.redis.calls - a.redis.calls))
	}
	w.redisCmdsPerS = cmds(first, last) / w.seconds
	w.redisCPUPct = 100 * (last.redis.cpu - first.redis.cpu) / w.seconds
	b.Logf("Redis commands/s in the window by command: %s", commandRates(first.redis.byCommand, last.redis.byCommand, w.seconds))
	for i := 1; i < len(rs); i++ {
		secs := rs[i].at.Sub(rs[i-1].at).Seconds()
		w.redisWorstPart = max(w.redisWorstPart, cmds(rs[i-1], rs[i])/secs)
		for k := range ws {
			w.cpuWorstPart = max(w.cpuWorstPart, 100*(rs[i].cpu[k]-rs[i-1].cpu[k]).Seconds()/secs)
		}
	}
	for k := range ws {
		w.cpuPct = max(w.cpuPct, 100*(last.cpu[k]-first.cpu[k]).Seconds()/w.seconds)
		for _, r := range rs {
			w.rssMB = max(w.rssMB, float64(r.rss[k])/(1<<20))
			w.kidsRSSMB = max(w.kidsRSSMB, float64(r.kidsRSS[k])/(1<<20))
		}
		d := last.zk[k].Sub(first.zk[k])
		b.Logf("%s: ZooKeeper requests/s in the window by operation: %s", ws[k].name, opRates(d.ByOp, w.seconds))
		if wr := float64(d.Writes) / w.seconds; wr >= w.zkWritesPerS {
			w.zkWritesPerS, w.zkWriteOpsPerS = wr, float64(d.WriteOps)/w.seconds
		}
		w.zkRequestsPerS = max(w.zkRequestsPerS, float64(d.Writes+d.Reads+d.Pings+d.Other)/w.seconds)
	}
	w.publishes = last.redis.publishes - first.redis.publishes
	w.enqueued = last.enqueued - first.enqueued
	w.latency = last.latency
	w.latency.Sub(&first.latency)
	w.stored = last.stored
	w.stored.Sub(&first.stored)
	w.started = w.latency.Total()
	return w
}

func (w window) report(b *testing.B, prefix string) {
	b.ReportMetric(w.redisCmdsPerS, prefix+"redis-cmds/s")
	b.ReportMetric(w.redisWorstPart, prefix+"redis-cmds/s-worst-part")
	b.ReportMetric(w.redisCPUPct, prefix+"redis-cpu-%")
	b.ReportMetric(w.cpuPct, prefix+"cpu-%-max-worker")
	b.ReportMetric(w.cpuWorstPart, prefix+"cpu-%-worst-part")
	b.ReportMetric(w.rssMB, prefix+"rss-MB-max-worker")
	b.ReportMetric(w.kidsRSSMB, prefix+"lease-child-rss-MB")
	b.ReportMetric(w.zkWritesPerS, prefix+"zk-writes/s-max-member")
	b.ReportMetric(w.zkWriteOpsPerS, prefix+"zk-write-ops/s")
	b.ReportMetric(w.zkRequestsPerS, prefix+"zk-requests/s-max-member")
	if prefix == "busy-" {
		b.ReportMetric(float64(w.enqueued)/w.seconds, prefix+"msgs/s")
		b.ReportMetric(float64(w.started)/w.seconds, prefix+"started/s")
		b.ReportMetric(float64(w.latency.Quantile(0.5).Microseconds())/1000, prefix+"p50-ms")
		b.ReportMetric(float64(w.latency.Quantile(0.99).Microseconds())/1000, prefix+"p99-ms")
		b.ReportMetric(float64(w.latency.Quantile(1).Microseconds())/1000, prefix+"max-ms")
		b.ReportMetric(float64(w.stored.Quantile(0.5).Microseconds())/1000, prefix+"stored-p50-ms")
		b.ReportMetric(float64(w.stored.Quantile(0.99).Microseconds())/1000, prefix+"stored-p99-ms")
		b.ReportMetric(float64(w.stored.Quantile(1).Microseconds())/1000, prefix+"stored-max-ms")
	}
}

// waitDrained waits until the workers have started sent messages (after
// the producer stopped) and returns how long that took after the call.
func waitDrained(b *testing.B, ws []*worker, sent int64, bound time.Duration) time.Duration {
	b.Helper()
	start := time.Now()
	for {
		var all Snapshot
		for _, w := range ws {
			s, err := ReadSnapshot(w.latPath)
			if err != nil {
				b.Fatal(err)
			}
			all.Add(&s)
		}
		if all.Total() >= sent {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			b.Logf("after %s the workers had started %d of %d messages", bound, all.Total(), sent)
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// producer sends rate messages/s spread evenly over queues q0…q<n-1>, open
// loop: four goroutines each own every fourth queue and, every few
// milliseconds, enqueue in one EnqueueBatch whatever has come due since
// their last batch — a slow call makes the next batch bigger, never the
// schedule later.
type producer struct {
	store  *queue.Store
	queues int
	rate   int

	sent    atomic.Int64
	calls   atomic.Int64 // EnqueueBatch calls
	callNs  atomic.Int64 // their total time
	stopped chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	mu      sync.Mutex
	err     error
}

const producers = 4

func newProducer(store *queue.Store, queues, rate int) *producer {
	return &producer{store: store, queues: queues, rate: rate, stopped: make(chan struct{})}
}

func (p *producer) start() {
	begin := time.Now()
	for g := 0; g < producers; g++ {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.run(g, begin)
		}()
	}
}

func (p *producer) run(g int, begin time.Time) {
	mine := (p.queues - g + producers - 1) / producers // queues g, g+4, …
	if mine == 0 {
		return
	}
	rate := float64(p.rate) / producers
	var sent int64
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stopped:
			return
		case <-tick.C:
		}
		due := int64(time.Since(begin).Seconds()*rate) - sent
		for due > 0 {
			n := min(due, 1000)
			msgs := make([]*drover.Message, n)
			for i := range msgs {
				q := g + int((sent+int64(i))%int64(mine))*producers
				msgs[i] = &drover.Message{Queue: queueName(q), Task: "bench.stamp"}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			callStart := time.Now()
			_, err := p.store.EnqueueBatch(ctx, msgs)
			p.callNs.Add(int64(time.Since(callStart)))
			p.calls.Add(1)
			cancel()
			if err != nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
				return
			}
			sent += n
			due -= n
			p.sent.Add(n)
		}
	}
}

func (p *producer) stop() {
	p.once.Do(func() { close(p.stopped) })
	p.wg.Wait()
}

func (p *producer) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// logLevel is the workers' log level: warn, or DROVER_FLEETBENCH_LOG_LEVEL.
func logLevel() string {
	if v := os.Getenv("DROVER_FLEETBENCH_LOG_LEVEL"); v != "" {
		return v
	}
	return "warn"
}

// opRates formats requests by operation as rates, busiest first.
func opRates(byOp map[int32]int64, seconds float64) string {
	ops := make([]int32, 0, len(byOp))
	for op := range byOp {
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b int32) int { return int(byOp[b] - byOp[a]) })
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %.1f", zkproxy.OpName(op), float64(byOp[op])/seconds)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// commandRates formats the busiest commands between two commandstats
// readings as rates.
func commandRates(before, after map[string]int64, seconds float64) string {
	names := make([]string, 0, len(after))
	for n := range after {
		if after[n] > before[n] {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return int((after[b] - before[b]) - (after[a] - before[a])) })
	parts := make([]string, 0, 24)
	for _, n := range names[:min(24, len(names))] {
		parts = append(parts, fmt.Sprintf("%s %.0f", n, float64(after[n]-before[n])/seconds))
	}
	return strings.Join(parts, ", ")
}

// reportStages reports the mean time of each stage of a message's way to
// its start over the busy window, from the workers' stage counters
// (worker.Stages): enqueue → read returned, of which the reader's queue and
// round trip, and read → start.
func reportStages(b *testing.B, st0, st1 stageStats) {
	toRead := meanMs(st0.EnqueueToRead, st1.EnqueueToRead)
	toStart := meanMs(st0.EnqueueToStart, st1.EnqueueToStart)
	b.ReportMetric(toStart, "busy-mean-enqueue-to-start-ms")
	b.ReportMetric(toRead, "busy-mean-enqueue-to-read-ms")
	b.ReportMetric(meanMs(st0.ReadQueued, st1.ReadQueued), "busy-mean-read-queued-ms")
	b.ReportMetric(meanMs(st0.ReadTrip, st1.ReadTrip), "busy-mean-read-trip-ms")
	b.ReportMetric(meanMs(st0.Wake, st1.Wake), "busy-mean-wake-ms")
	if rounds := st1.ReadRounds - st0.ReadRounds; rounds > 0 {
		b.ReportMetric(float64(st1.Reads-st0.Reads)/float64(rounds), "busy-reads/round-trip")
	}
	b.Logf("busy stages (means): enqueue→read returned %.1f ms (read queued %.1f ms, round trip %.1f ms, parked loop's wake %.2f ms), read→start %.1f ms; enqueue→start %.1f ms; backlog reads %d in %d round trips",
		toRead, meanMs(st0.ReadQueued, st1.ReadQueued), meanMs(st0.ReadTrip, st1.ReadTrip), meanMs(st0.Wake, st1.Wake),
		toStart-toRead, toStart, st1.BacklogReads-st0.BacklogReads, st1.BacklogRounds-st0.BacklogRounds)
}
