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
	"github.com/drover-dev/drover/internal/testing/proxy"
	"github.com/drover-dev/drover/internal/testing/testenv"
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
//  5. Busy windows: an open-loop producer sends Rate messages/s spread
//     evenly over BusyQueues queues (EnqueueBatch from four goroutines, each
//     batch carrying what has come due since its last one); the bench.stamp
//     handler counts enqueued_at → start per message in the worker.
//     BusyWindows windows back to back with the producer running
//     throughout, each with its own enqueue-to-start quantiles (the
//     difference of the histogram files at its ends), whether the fleet
//     keeps up, ZooKeeper write requests per member (the proxies) and
//     Redis PUBLISH calls per message enqueued (INFO commandstats); each
//     figure is reported as the median over the windows, with -min and
//     -max. Then the drain, once.
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

// BenchmarkFleetRuntimeSparse is BenchmarkFleetRuntime with the same
// rate spread over five times the busy keys (50,000 keys × 0.2 messages/s
// by default: issue 43's second busy fleet), where a message is more often
// alone on its queue: its read, start, record and trim are its own. The
// DROVER_FLEETBENCH_ variables apply; DROVER_FLEETBENCH_BUSY_QUEUES set
// replaces the five times.
func BenchmarkFleetRuntimeSparse(b *testing.B) {
	sz, err := sizesFromEnv(os.Getenv)
	if err != nil {
		b.Fatal(err)
	}
	if os.Getenv("DROVER_FLEETBENCH_BUSY_QUEUES") == "" {
		sz.BusyQueues = min(5*sz.BusyQueues, sz.Queues)
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
	keepLogs(b, ws, os.Getenv("DROVER_FLEETBENCH_PROFILES"))
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
	idle, _ := measure(b, rm, ws, sz.Window, nil, sample(b, rm, ws, nil))
	fullG := make([]int, len(ws))
	for i, w := range ws {
		if fullG[i], err = w.goroutines(); err != nil {
			b.Fatal(err)
		}
	}
	idle.figures("idle-").report(b)
	reportLiveHeaps(b, ws)
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
	busyWindows(b, rm, ws, p, sz)
}

// busyWindows measures sz.BusyWindows windows of sz.Window back to back
// with p running throughout, then stops p and measures the drain once. Each
// busy figure is reported as the median over the windows, with its
// smallest and largest value as <name>-min and <name>-max; each window's
// target figures are logged.
func busyWindows(b *testing.B, rm *redisMeter, ws []*worker, p *producer, sz sizes) {
	b.Helper()
	wins := make([]window, sz.BusyWindows)
	stages := make([]stageStats, sz.BusyWindows+1) // at each window's start, and the last one's end
	var err error
	if stages[0], err = readStages(ws); err != nil {
		b.Fatal(err)
	}
	defer dumpGoroutines(b, ws, os.Getenv("DROVER_FLEETBENCH_PROFILES"), sz.Window/subWindows)()
	at := sample(b, rm, ws, p)
	for i := range wins {
		profiled := func() {}
		if i == len(wins)-1 {
			// DROVER_FLEETBENCH_PROFILES: a CPU profile of every worker
			// over the last busy window (<worker>.cpu in that directory).
			profiled = profileWorkers(b, ws, os.Getenv("DROVER_FLEETBENCH_PROFILES"), sz.Window)
		}
		wins[i], at = measure(b, rm, ws, sz.Window, p, at)
		profiled()
		if stages[i+1], err = readStages(ws); err != nil {
			b.Fatal(err)
		}
	}
	p.stop()
	drain := waitDrained(b, ws, p.sent.Load(), 60*time.Second)
	if err := p.failure(); err != nil {
		b.Fatalf("producer: %v", err)
	}
	// Read after the windows: the monitor's PUBSUB commands are not the
	// INFO calls the windows subtract.
	subs, err := maxSubscribers(context.Background(), rm.c)
	if err != nil {
		b.Fatal(err)
	}
	per := make([]figures, len(wins))
	for i, w := range wins {
		per[i] = w.busyFigures(sz.Rate, subs)
		for k, v := range stageFigures(stages[i], stages[i+1]) {
			per[i][k] = v
		}
		f := per[i]
		b.Logf("busy window %d/%d: p50 %.2f ms, p99 %.2f ms, stored p50 %.2f ms, started/enqueued %.3f, msgs/s of asked %.3f, ZooKeeper writes/s (busiest member) %.1f, deliveries/msg %.3f, the machine's CPU used %.0f%% (%.0f%% in its busiest part)",
			i+1, len(wins), f["busy-p50-ms"], f["busy-p99-ms"], f["busy-stored-p50-ms"], f["busy-started/enqueued"], f["busy-msgs/s-of-asked"], f["busy-zk-writes/s-max-member"], f["busy-deliveries/msg"], f["busy-host-cpu-%"], f["busy-host-cpu-%-worst-part"])
		st0, st1 := stages[i], stages[i+1]
		b.Logf("busy window %d/%d stages (means): enqueue→read returned %.1f ms (read queued %.1f ms, round trip %.1f ms, parked loop's wake %.2f ms), read→start %.1f ms; enqueue→start %.1f ms; queue reads %d in %d round trips, messages taken from their wake-ups %d; backlog reads %d in %d round trips",
			i+1, len(wins), f["busy-mean-enqueue-to-read-ms"], f["busy-mean-read-queued-ms"], f["busy-mean-read-trip-ms"], f["busy-mean-wake-ms"],
			f["busy-mean-enqueue-to-start-ms"]-f["busy-mean-enqueue-to-read-ms"], f["busy-mean-enqueue-to-start-ms"],
			st1.Reads-st0.Reads, st1.ReadRounds-st0.ReadRounds, st1.Carried.Count-st0.Carried.Count, st1.BacklogReads-st0.BacklogReads, st1.BacklogRounds-st0.BacklogRounds)
	}
	median, lo, hi := summarize(per)
	median.report(b)
	for k := range median {
		b.ReportMetric(lo[k], k+"-min")
		b.ReportMetric(hi[k], k+"-max")
	}
	b.ReportMetric(float64(len(wins)), "busy-windows")
	b.ReportMetric(drain.Seconds(), "busy-drain-s")
	b.ReportMetric(float64(subs), "busy-max-subscribers")
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
		n, err := s.Queues().CreateMany(cctx, cfgs)
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
	commands  int64            // total_commands_processed
	publishes int64            // PUBLISH and SPUBLISH calls, from scripts too (commandstats)
	calls     int64            // the meter's own commands before this reading
	byCommand map[string]int64 // commandstats calls
	usec      map[string]int64 // commandstats usec (a script's includes its commands')
	cpu       float64          // used_cpu_user + used_cpu_sys of the server, seconds
	cpuSys    float64          // used_cpu_sys alone: the kernel's part (sockets, epoll)
	netReads  int64            // total_reads_processed: read events on client sockets
	netWrites int64            // total_writes_processed: writes to client sockets
}

func (m *redisMeter) read(ctx context.Context) (redisCounters, error) {
	rc := redisCounters{calls: m.calls, byCommand: map[string]int64{}, usec: map[string]int64{}}
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
				if k == "used_cpu_sys:" {
					rc.cpuSys = x
				}
			}
		}
		if v, ok := strings.CutPrefix(line, "total_reads_processed:"); ok {
			rc.netReads, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "total_writes_processed:"); ok {
			rc.netWrites, _ = strconv.ParseInt(v, 10, 64)
		}
		if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			name, v, _ := strings.Cut(rest, ":")
			rc.byCommand[name] = statField(v, "calls")
			rc.usec[name] = statField(v, "usec")
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
	host     hostCPU // the machine's CPU time so far (every process on it)
	redis    redisCounters
	cpu      []time.Duration
	rss      []int64
	kidsRSS  []int64
	zk       []proxy.Counts
	latency  Snapshot // the workers' bench.stamp histograms, merged
	stored   Snapshot // the same from the messages' positions (stored in Redis → start)
	enqueued int64    // the producer's messages so far

	producerCalls, producerCallNs int64 // the producer's EnqueueBatch calls so far and their total time
}

func sample(b *testing.B, rm *redisMeter, ws []*worker, p *producer) reading {
	b.Helper()
	if p != nil {
		// Redis's counters and the producer's count as one cut: no batch
		// that Redis has run but the producer has not counted yet (see
		// producer.inFlight).
		p.inFlight.Lock()
	}
	r := reading{at: time.Now()}
	var err error
	if r.host, err = HostCPU(); err != nil {
		b.Fatal(err)
	}
	r.redis, err = rm.read(context.Background())
	if p != nil {
		r.enqueued = p.sent.Load()
		r.producerCalls, r.producerCallNs = p.calls.Load(), p.callNs.Load()
		p.inFlight.Unlock()
	}
	if err != nil {
		b.Fatal(err)
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

	sent  atomic.Int64
	calls atomic.Int64 // EnqueueBatch calls
	// inFlight is held for reading over each EnqueueBatch call and the
	// count after it, and for writing by sample over its Redis INFO: a
	// batch Redis had run but sent did not count yet put a window's
	// publishes per message up to 1% above 1 at 20 s windows (a slow call
	// carries up to 1,000 messages per goroutine). A sample holds the
	// producer back for one INFO round trip (and until the calls in flight
	// return); EnqueueBatch stamps enqueued_at after the wait, and the
	// messages that came due meanwhile go in the next batch.
	inFlight sync.RWMutex
	callNs   atomic.Int64 // their total time
	stopped  chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
	mu       sync.Mutex
	err      error
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
			p.inFlight.RLock()
			callStart := time.Now()
			_, err := p.store.Producer().EnqueueBatch(ctx, msgs)
			p.callNs.Add(int64(time.Since(callStart)))
			p.calls.Add(1)
			if err == nil {
				p.sent.Add(n)
			}
			p.inFlight.RUnlock()
			cancel()
			if err != nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
				return
			}
			sent += n
			due -= n
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
		parts[i] = fmt.Sprintf("%s %.1f", proxy.OpName(op), float64(byOp[op])/seconds)
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

// reportLiveHeaps reports the live heap of the largest worker after an idle
// window, and logs every worker's beside its RSS: how far RSS runs above
// what the worker holds (the GC's headroom). DROVER_FLEETBENCH_PROFILES
// names a folder to keep the heap profiles in.
func reportLiveHeaps(b *testing.B, ws []*worker) {
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
}
