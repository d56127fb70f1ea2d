package fleetbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/tools/chaos/check"
)

// BenchmarkChurn measures issue 40's key churn on real worker processes
// (docs/benchmarks.md, "Key churn"): a private ZooKeeper and Redis, Workers
// `drover worker` processes, one family (prefix "c-", ordered, park after
// 3 attempts, retire_after RetireAfter) with two routes: bench.stamp inline
// (a new key's only message: the workers' histograms give first enqueue →
// start) and "work", the chaos run's task program (tools/chaos/task),
// which sleeps args.sleep_ms and appends one line per run to a task log,
// marked killed when it got SIGTERM.
//
//  1. Busy keys c-busy-NNN (Busy of them) run 5–10 s "work" tasks without
//     a pause: a feeder keeps two messages outstanding per key.
//  2. The producer enqueues one bench.stamp message into each new name
//     c-key-NNNNNNN at Rate a second: first Keys names (the keys
//     registered before the churn), then for Duration more (the churn).
//     Every key goes idle after its message, and the family's retire sweep
//     may retire it RetireAfter later: from the churn's start, about Rate
//     keys a second become retirable while Rate new ones arrive.
//  3. After the churn, the busy feeder stops, every busy message and every
//     new key's message runs, and the figures are read from outside the
//     workers: the task log (runs killed, messages started twice, worker
//     changes), the busy keys' owner nodes polled every second (moves), the
//     bench.stamp histograms (first start during the churn), the registry
//     (keys retired), the workers' /debug/state (queues per member, the
//     balance), /pause/queues (busy keys parked).
//  4. Then the Fleet runtime section's idle window (idle-*).
//
// The drain timeout is 5 s, as in `drover dev` (issue 40's setting): a
// planned move must not depend on it being longer than the task. Each
// worker has a slot for every busy key and 16 more, so that no busy key
// waits for a slot and no new key waits for the busy ones.
func BenchmarkChurn(b *testing.B) {
	sz, err := churnSizesFromEnv(os.Getenv)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		runChurn(b, sz)
	}
}

// The churn family's names.
const (
	churnPrefix = "c-"
	busyTask    = "work"
)

func busyKey(i int) string  { return fmt.Sprintf("c-busy-%03d", i) }
func churnKey(i int) string { return fmt.Sprintf("c-key-%07d", i) }

// buildTaskProgram builds tools/chaos/task into dir.
func buildTaskProgram(tb testing.TB, dir string) string {
	tb.Helper()
	bin := filepath.Join(dir, "task")
	if out, err := exec.Command("go", "build", "-o", bin, "../chaos/task").CombinedOutput(); err != nil {
		tb.Fatalf("go build ./tools/chaos/task: %v\n%s", err, out)
	}
	return bin
}

func runChurn(b *testing.B, sz churnSizes) {
	bin := buildDrover(b)
	dir := b.TempDir()
	task := buildTaskProgram(b, dir)
	taskLog, startLog := filepath.Join(dir, "tasks.log"), filepath.Join(dir, "starts.log")
	zkServer := testenv.NewZooKeeper(b)
	redisServer := testenv.NewRedis(b, testenv.RedisOptions{})
	root, prefix := testenv.Chroot(b), testenv.Prefix(b)
	ctx := context.Background()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	s, err := coordinator.Connect(cctx, coordinator.Config{Servers: zkServer.Addrs, Root: root, SessionTimeout: 30 * time.Second})
	cancel()
	if err != nil {
		b.Fatalf("connect to zookeeper: %v", err)
	}
	b.Cleanup(func() { s.Close() })
	fam := drover.FamilyConfig{Name: "churn", Prefix: churnPrefix, RetireAfter: drover.Duration(sz.RetireAfter),
		Queue: drover.QueueConfig{Ordered: true, MaxAttempts: 3, OnFailure: drover.OnFailurePark, Timeout: drover.Duration(30 * time.Second),
			Tasks: map[string]drover.TaskRoute{"bench.stamp": {Inline: true}, busyTask: {Command: []string{task, taskLog, startLog}}}}}
	if err := s.Families().Create(ctx, fam); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(),
		"DROVER_ZOOKEEPER_ROOT="+root,
		"DROVER_REDIS_ADDRS="+redisServer.Addr,
		"DROVER_REDIS_PREFIX="+prefix,
		"DROVER_LOG_LEVEL="+logLevel(),
		fmt.Sprintf("DROVER_WORKER_CAPACITY=%d", sz.Busy+16),
		"DROVER_WORKER_DRAIN_TIMEOUT="+sz.DrainTimeout.String(),
	)
	ws := make([]*worker, sz.Workers)
	for i := range ws {
		ws[i] = startWorker(b, bin, dir, fmt.Sprintf("w%d", i+1), zkServer.Addrs[0], env)
	}
	if keep := os.Getenv("DROVER_CHURNBENCH_KEEP_LOGS"); keep != "" {
		if err := os.MkdirAll(keep, 0o755); err != nil {
			b.Fatalf("DROVER_CHURNBENCH_KEEP_LOGS: %v", err)
		}
		b.Cleanup(func() { // registered after the workers': runs before they stop
			for _, w := range ws {
				data, err := os.ReadFile(w.logPath)
				b.Logf("keep %s: %d bytes (%v)", w.logPath, len(data), err)
				_ = os.WriteFile(filepath.Join(keep, w.name+".log"), data, 0o644)
			}
		})
	}
	waitConverged(b, s, ws, 0, time.Minute)
	time.Sleep(3 * time.Second) // the leader's registrar subscribes (a lost first wake-up waits for the scan)

	rdb := redis.NewClient(&redis.Options{Addr: redisServer.Addr, PoolSize: 16})
	b.Cleanup(func() { rdb.Close() })
	store, err := queue.New(queue.Config{Client: rdb, Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	conn, _, err := zk.Connect(zkServer.Addrs, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		b.Fatalf("connect to zookeeper: %v", err)
	}
	b.Cleanup(conn.Close)

	feeder := &busyFeeder{store: store, keys: sz.Busy, logPath: taskLog, rng: rand.New(rand.NewPCG(1, 2))}
	if err := os.WriteFile(startLog, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	poller := &ownerPoller{conn: conn, root: root, keys: sz.Busy}
	stopFeed, stopPoll := make(chan struct{}), make(chan struct{})
	feedDone, pollDone := make(chan error, 1), make(chan struct{})
	defer feeder.close()
	go func() { feedDone <- feeder.run(ctx, stopFeed) }()
	go func() { defer close(pollDone); poller.run(stopPoll) }()
	defer func() { // after a failure
		select {
		case <-stopFeed:
		default:
			close(stopFeed)
		}
		select {
		case <-stopPoll:
		default:
			close(stopPoll)
		}
	}()

	// The keys registered before the churn, then the churn: one producer,
	// the churn starting when the Keys-th name has been sent.
	total := sz.Keys + int(sz.Duration.Seconds()*float64(sz.Rate))
	sentAt := make([]time.Time, total)
	var (
		churnStart time.Time
		histStart  Snapshot
	)
	start := time.Now()
	for sent := 0; sent < total; {
		due := min(total, int(time.Since(start).Seconds()*float64(sz.Rate)))
		if churnStart.IsZero() && due >= sz.Keys {
			due = sz.Keys // the churn starts exactly after the Keys-th name
		}
		if due > sent {
			msgs := make([]*drover.Message, 0, due-sent)
			for i := sent; i < due; i++ {
				msgs = append(msgs, &drover.Message{Queue: churnKey(i), Task: "bench.stamp"})
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
		if churnStart.IsZero() && sent == sz.Keys {
			churnStart = time.Now()
			poller.startCounting()
			histStart = mergedLatency(b, ws)
			regStart, err := registryCount(conn, root)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("churn starts after %s: %d keys sent, %d registered", churnStart.Sub(start).Round(time.Millisecond), sent, regStart)
			start = churnStart.Add(-time.Duration(float64(sz.Keys) / float64(sz.Rate) * float64(time.Second)))
			continue
		}
		time.Sleep(10 * time.Millisecond)
	}
	churnEnd := time.Now()
	newSent := total - sz.Keys
	b.Logf("churn ends after %s: %d new keys sent", churnEnd.Sub(churnStart).Round(time.Millisecond), newSent)

	// The end of the churn: every new key's message runs; the registry
	// and the balance are read then, while the busy keys still run (once
	// they stop, they retire too).
	drain := waitDrained(b, ws, int64(total), 2*time.Minute)
	measuredEnd := time.Now()
	histEnd := mergedLatency(b, ws)
	regEnd, err := registryCount(conn, root)
	if err != nil {
		b.Fatal(err)
	}
	var retirableKeys []string
	for i, t := range sentAt {
		if due := t.Add(sz.RetireAfter); !due.Before(churnStart) && due.Before(measuredEnd) {
			retirableKeys = append(retirableKeys, churnKey(i))
		}
	}
	rs, err := sampleRetired(ctx, conn, root, store, retirableKeys, 2000)
	if err != nil {
		b.Fatal(err)
	}
	owned := make([]int, len(ws))
	for i, w := range ws {
		names, err := w.ownedQueues()
		if err != nil {
			b.Fatal(err)
		}
		owned[i] = len(names)
	}
	// Then no more busy messages; every one sent runs.
	close(stopFeed)
	if err := <-feedDone; err != nil {
		b.Fatalf("busy feeder: %v", err)
	}
	left := feeder.waitRun(2 * time.Minute)
	close(stopPoll)
	<-pollDone
	parked := 0
	for i := 0; i < sz.Busy; i++ {
		if ok, _, err := conn.Exists(root + "/pause/queues/" + busyKey(i)); err == nil && ok {
			parked++
		}
	}

	// Figures.
	starts, err := readStarts(startLog)
	if err != nil {
		b.Fatal(err)
	}
	runs := busyRunFigures(starts, feeder.executions(), churnStart, 10*time.Second)
	drainKills := countLogLines(ws, "drain timeout: killing in-flight tasks")
	moves, movedKeys := poller.total()
	first := histEnd
	first.Sub(&histStart)
	phase := measuredEnd.Sub(churnStart).Seconds()
	retirable := len(retirableKeys)
	retired := int(rs.retiredShare() * float64(retirable))
	most, least, ratio := balance(owned)

	b.ReportMetric(float64(sz.Workers), "workers")
	b.ReportMetric(float64(sz.Keys), "keys")
	b.ReportMetric(float64(sz.Busy), "busy-keys")
	b.ReportMetric(sz.Duration.Seconds(), "churn-s")
	b.ReportMetric(sz.RetireAfter.Seconds(), "retire-after-s")
	b.ReportMetric(float64(sz.Rate), "new-keys/s-asked")
	b.ReportMetric(float64(newSent)/churnEnd.Sub(churnStart).Seconds(), "new-keys/s-sent")
	b.ReportMetric(float64(retirable)/phase, "retirable/s")
	b.ReportMetric(float64(retired)/phase, "retired/s")
	b.ReportMetric(100*rs.retiredShare(), "retired-%-of-retirable")
	b.ReportMetric(100*rs.unregisteredShare(), "never-registered-%-of-retirable")
	b.ReportMetric(float64(first.Total()), "new-keys-started")
	b.ReportMetric(100*float64(first.Total())/float64(newSent), "new-keys-started-%")
	b.ReportMetric(first.Quantile(0.5).Seconds()*1000, "first-start-p50-ms")
	b.ReportMetric(first.Quantile(0.99).Seconds()*1000, "first-start-p99-ms")
	b.ReportMetric(first.Quantile(1).Seconds()*1000, "first-start-max-ms")
	b.ReportMetric(float64(runs.Runs), "busy-runs")
	b.ReportMetric(float64(runs.Killed), "busy-killed")
	b.ReportMetric(float64(runs.KeysKilled), "busy-keys-killed")
	b.ReportMetric(float64(runs.Repeated), "busy-repeats")
	b.ReportMetric(float64(drainKills), "drain-timeouts-logged")
	b.ReportMetric(float64(moves), "busy-moves")
	b.ReportMetric(float64(movedKeys), "busy-keys-moved")
	b.ReportMetric(float64(runs.PIDChanges), "busy-worker-changes")
	b.ReportMetric(float64(parked), "busy-parked")
	b.ReportMetric(float64(left), "busy-unrun")
	b.ReportMetric(drain.Seconds(), "drain-s")
	b.ReportMetric(float64(regEnd), "registered-end")
	b.ReportMetric(float64(most), "queues-max-member")
	b.ReportMetric(float64(least), "queues-min-member")
	b.ReportMetric(ratio, "balance-max/min")
	b.Logf("churn %s: %d new keys at %d/s, %d retirable, of a sample of %d: %d retired, %d still registered, %d never registered (about %.0f retired a second); first start p50 %s p99 %s max %s over %d starts",
		sz.Duration, newSent, sz.Rate, retirable, rs.sampled, rs.retired, rs.registered, rs.unregistered, float64(retired)/phase, first.Quantile(0.5), first.Quantile(0.99), first.Quantile(1), first.Total())
	b.Logf("busy keys: %d runs in the phase, %d killed (%d keys), %d messages started twice, %d owner moves (%d keys), %d worker changes in the task log, %d parked, %d messages not run; %d drain timeouts in the worker logs; queues per member %v",
		runs.Runs, runs.Killed, runs.KeysKilled, runs.Repeated, moves, movedKeys, runs.PIDChanges, parked, left, drainKills, owned)

	if sz.IdleWindow > 0 {
		mon := redis.NewClient(&redis.Options{Addr: redisServer.Addr, PoolSize: 1})
		defer mon.Close()
		rm := &redisMeter{c: mon}
		// Afterwards: once the keys of the churn's last seconds had their
		// retire_after and the sweep its minute to retire them, as a fleet
		// is idle once its work ended (retirement is work: measured while
		// it ran, the window counted the sweep's scripts, not the idle
		// fleet's cost).
		settled := settle(ws, 10*time.Second, sz.RetireAfter+60*time.Second, 2*idleCPUTarget)
		b.ReportMetric(settled.Seconds(), "settle-s")
		if n, err := registryCount(conn, root); err == nil {
			b.ReportMetric(float64(n), "idle-registered")
		}
		idle, _ := measure(b, rm, ws, sz.IdleWindow, nil, sample(b, rm, ws, nil))
		idle.figures("idle-").report(b)
		b.Logf("idle after %s quiet: %.0f Redis commands/s, %.2f%% CPU (busiest worker), %.1f MB RSS (largest worker)",
			settled.Round(time.Second), idle.redisCmdsPerS, idle.cpuPct, idle.rssMB)
	}
}

// mergedLatency is the workers' bench.stamp histograms, merged.
func mergedLatency(b *testing.B, ws []*worker) Snapshot {
	var all Snapshot
	for _, w := range ws {
		s, err := ReadSnapshot(w.latPath)
		if err != nil {
			b.Fatal(err)
		}
		all.Add(&s)
	}
	return all
}

// retiredSample is what became of a sample of the keys that passed their
// retire_after during the churn.
type retiredSample struct {
	sampled, retired, registered, unregistered int
}

func (r retiredSample) retiredShare() float64 {
	if r.sampled == 0 {
		return 0
	}
	return float64(r.retired) / float64(r.sampled)
}

func (r retiredSample) unregisteredShare() float64 {
	if r.sampled == 0 {
		return 0
	}
	return float64(r.unregistered) / float64(r.sampled)
}

// sampleRetired looks at up to n of keys, evenly spread: a key with a
// registry entry (/queues/<bucket>/<key>, docs/zookeeper-layout.md) is
// registered; one without is retired when its queue log in Redis is empty
// (the sweep retires only empty queues) and was never registered when its
// message is still there (the registrar has not reached it).
func sampleRetired(ctx context.Context, conn *zk.Conn, root string, store *queue.Store, keys []string, n int) (retiredSample, error) {
	var r retiredSample
	step := max(1, len(keys)/n)
	for i := 0; i < len(keys); i += step {
		q := keys[i]
		r.sampled++
		ok, _, err := conn.Exists(queueConfigPath(root, q))
		if err != nil {
			return r, fmt.Errorf("registry entry of %s: %w", q, err)
		}
		if ok {
			r.registered++
			continue
		}
		_, err = store.Inspector().LastPosition(ctx, q)
		switch {
		case errors.Is(err, drover.ErrNotFound):
			r.retired++
		case err != nil:
			return r, err
		default:
			r.unregistered++
		}
	}
	return r, nil
}

// queueConfigPath is a queue's registry entry: /queues/<bucket>/<queue>,
// the bucket the name's FNV-1a hash modulo 1024 in three hex digits
// (docs/zookeeper-layout.md).
func queueConfigPath(root, q string) string {
	h := fnv.New32a()
	h.Write([]byte(q))
	return fmt.Sprintf("%s/queues/%03x/%s", root, h.Sum32()%1024, q)
}

// readStarts reads the task program's start lines.
func readStarts(path string) ([]check.Execution, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []check.Execution
	for _, l := range strings.Split(string(data), "\n") {
		if l == "" {
			continue
		}
		e, err := check.ParseStart(l)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// countLogLines counts the lines of the workers' logs that contain s.
func countLogLines(ws []*worker, s string) int {
	n := 0
	for _, w := range ws {
		data, err := os.ReadFile(w.logPath)
		if err != nil {
			continue
		}
		n += strings.Count(string(data), s)
	}
	return n
}

// registryCount counts the registered queues: the children of every
// registry bucket (/queues/<bucket>, docs/zookeeper-layout.md), from the
// buckets' stats.
func registryCount(conn *zk.Conn, root string) (int, error) {
	buckets, _, err := conn.Children(root + "/queues")
	if err != nil {
		return 0, fmt.Errorf("list the registry buckets: %w", err)
	}
	n := 0
	for _, bk := range buckets {
		ok, st, err := conn.Exists(root + "/queues/" + bk)
		if err != nil {
			return 0, fmt.Errorf("registry bucket %s: %w", bk, err)
		}
		if ok {
			n += int(st.NumChildren)
		}
	}
	return n, nil
}

// busyFeeder keeps two "work" messages outstanding on each busy key (a run
// that is killed does not count: its message runs again), each sleeping 5
// to 10 s, and reads the task log the runs append to.
type busyFeeder struct {
	store   *queue.Store
	keys    int
	logPath string
	rng     *rand.Rand

	mu      sync.Mutex
	execs   []check.Execution
	sent    []int // per key
	done    []int // per key: runs that finished (not killed)
	reader  *check.TaskLogReader
	logFile *os.File
}

// close closes the task log.
func (f *busyFeeder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logFile != nil {
		f.logFile.Close()
	}
}

// run feeds the keys every 250 ms until stop is closed.
func (f *busyFeeder) run(ctx context.Context, stop <-chan struct{}) error {
	lf, err := os.OpenFile(f.logPath, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.logFile, f.reader = lf, check.NewTaskLogReader(lf)
	f.sent, f.done = make([]int, f.keys), make([]int, f.keys)
	f.mu.Unlock()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		if err := f.read(); err != nil {
			return err
		}
		var msgs []*drover.Message
		f.mu.Lock()
		for i := range f.keys {
			for f.sent[i]-f.done[i] < 2 {
				f.sent[i]++
				msgs = append(msgs, &drover.Message{Queue: busyKey(i), ID: fmt.Sprintf("b%03d-%06d", i, f.sent[i]), Task: busyTask,
					Args: json.RawMessage(fmt.Sprintf(`{"sleep_ms":%d}`, 5000+f.rng.IntN(5001)))})
			}
		}
		f.mu.Unlock()
		if len(msgs) > 0 {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := f.store.Producer().EnqueueBatch(cctx, msgs)
			cancel()
			if err != nil {
				return fmt.Errorf("enqueue busy messages: %w", err)
			}
		}
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
	}
}

// read takes the task log's new lines.
func (f *busyFeeder) read() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	es, err := f.reader.Next()
	if err != nil {
		return err
	}
	for _, e := range es {
		f.execs = append(f.execs, e)
		var i int
		if _, err := fmt.Sscanf(e.Queue, "c-busy-%03d", &i); err == nil && i < f.keys && !e.Killed {
			f.done[i]++
		}
	}
	return nil
}

// waitRun waits until every busy message sent has a finished run, at most
// bound, and returns how many have none.
func (f *busyFeeder) waitRun(bound time.Duration) int {
	deadline := time.Now().Add(bound)
	for {
		_ = f.read()
		f.mu.Lock()
		left := 0
		for i := range f.sent {
			left += max(0, f.sent[i]-f.done[i])
		}
		f.mu.Unlock()
		if left == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (f *busyFeeder) executions() []check.Execution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]check.Execution(nil), f.execs...)
}

// ownerPoller reads the owner node of every busy key every second and
// counts the owner changes once startCounting was called.
type ownerPoller struct {
	conn *zk.Conn
	root string
	keys int

	mu       sync.Mutex
	counting bool
	tracker  ownerTracker
}

func (p *ownerPoller) startCounting() {
	p.mu.Lock()
	p.counting = true
	p.mu.Unlock()
}

func (p *ownerPoller) run(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		for i := range p.keys {
			member := ""
			if data, _, err := p.conn.Get(p.root + "/owners/" + busyKey(i)); err == nil {
				var o struct {
					Member string `json:"member"`
				}
				if json.Unmarshal(data, &o) == nil {
					member = o.Member
				}
			}
			p.mu.Lock()
			p.tracker.observe(busyKey(i), member, p.counting)
			p.mu.Unlock()
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func (p *ownerPoller) total() (moves, keys int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tracker.total()
}
