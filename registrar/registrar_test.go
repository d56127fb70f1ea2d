package registrar

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/queue"
)

// The family registrar against real ZooKeeper and Redis, run directly (as
// a leadership term runs it), fed by a registry watch of its own.

type registrarEnv struct {
	t      *testing.T
	rdb    redis.UniversalClient
	prefix string
	zk     *coordinator.Session
	store  *queue.Store // publishes wake-ups
	quiet  *queue.Store // the same keys, no wake-ups: a lost one
	clock  *fakeNow
	fam    drover.FamilyConfig
	// frozen: the registrar sees the registry as it was when it started
	// (a registry watch that lags).
	frozen bool
}

// fakeNow is the wall clock moved forward by what the test adds (Add):
// its timers run at the wall clock's pace, so that the registrar's flushes
// and scans go on against the real servers while idle times jump.
type fakeNow struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeNow) NewTimer(d time.Duration) drover.Timer { return drover.SystemClock{}.NewTimer(d) }

func (c *fakeNow) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeNow) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newRegistrarEnv(t *testing.T) *registrarEnv {
	t.Helper()
	zs := testenv.ZooKeeper(t)
	s := connect(t, zs.Addrs, testenv.Chroot(t))
	rs := testenv.Redis(t)
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{rs.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	prefix := testenv.Prefix(t)
	e := &registrarEnv{t: t, rdb: rdb, prefix: prefix, zk: s, clock: &fakeNow{now: time.Now()}}
	if e.store, err = queue.New(queue.Config{Client: rdb, Prefix: prefix}); err != nil {
		t.Fatal(err)
	}
	if e.quiet, err = queue.New(queue.Config{Client: rdb, Prefix: prefix, DisableWakeups: true}); err != nil {
		t.Fatal(err)
	}
	e.fam = drover.FamilyConfig{Name: "customers", Prefix: "cust-", RetireAfter: drover.Duration(time.Hour),
		Queue: drover.QueueConfig{Concurrency: 2, RateLimit: drover.RateLimit{PerSecond: 5},
			Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}}
	if err := s.Families().Create(context.Background(), e.fam); err != nil {
		t.Fatal(err)
	}
	return e
}

// run runs a registrar on redis until the test ends.
func (e *registrarEnv) run(redis FamilyRedis, tune func(*Config)) {
	e.t.Helper()
	cfg := Config{Registry: ZooKeeper(e.zk), Redis: redis, Clock: e.clock,
		ScanEvery: time.Hour, SweepEvery: time.Hour, Logger: testkit.Logger(e.t, hclog.Warn)}
	ready := make(chan struct{})
	cfg.OnReady = func() { close(ready) }
	if tune != nil {
		tune(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	e.t.Cleanup(func() { cancel(); wg.Wait() })
	// The first snapshot is observed before Run starts, as a leader may
	// (its registry watch and the registrar start together).
	regs := e.zk.Queues().WatchRegistry(ctx)
	r.Observe(<-regs)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for reg := range regs {
			if !e.frozen {
				r.Observe(reg)
			}
		}
	}()
	go func() { defer wg.Done(); _ = r.Run(ctx) }()
	select {
	case <-ready:
	case <-time.After(time.Minute):
		e.t.Fatal("gave up waiting for the registrar to subscribe")
	}
}

func (e *registrarEnv) enqueue(s *queue.Store, q string) {
	e.t.Helper()
	if _, err := s.Producer().Enqueue(context.Background(), &drover.Message{Queue: q, Task: "t"}); err != nil {
		e.t.Fatal(err)
	}
}

// config returns q's config, or false when it is not registered.
func (e *registrarEnv) config(q string) (drover.QueueConfig, bool) {
	e.t.Helper()
	ent, err := e.zk.Queues().Get(context.Background(), q)
	if errors.Is(err, drover.ErrQueueNotFound) {
		return drover.QueueConfig{}, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return ent.Config, true
}

func (e *registrarEnv) waitRegistered(q string) drover.QueueConfig {
	e.t.Helper()
	var cfg drover.QueueConfig
	waitUntil(e.t, "queue "+q+" to be registered", func() bool {
		c, ok := e.config(q)
		cfg = c
		return ok
	})
	return cfg
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A first enqueue to a name under the family registers the queue with the
// family's configuration; a name under no family stays unregistered; a
// queue configured on its own keeps its configuration.
func TestRegistrarRegistersFamilyQueueAtFirstEnqueue(t *testing.T) {
	e := newRegistrarEnv(t)
	ctx := context.Background()
	if err := e.zk.Queues().Create(ctx, drover.QueueConfig{Name: "cust-vip", Concurrency: 9}); err != nil {
		t.Fatal(err)
	}
	e.run(e.store.Families(), nil)
	e.enqueue(e.store, "other-1")
	e.enqueue(e.store, "cust-vip")
	e.enqueue(e.store, "cust-42")
	cfg := e.waitRegistered("cust-42")
	if cfg.Family != "customers" || cfg.Concurrency != 2 || cfg.RateLimit.PerSecond != 5 || len(cfg.Tasks["*"].Command) != 1 {
		t.Fatalf("cust-42: want the family's config from family customers, have %+v", cfg)
	}
	if _, ok := e.config("other-1"); ok {
		t.Fatal("other-1 matches no family: want it unregistered, have it registered")
	}
	if vip, _ := e.config("cust-vip"); vip.Family != "" || vip.Concurrency != 9 {
		t.Fatalf("cust-vip was configured on its own: want concurrency 9 and no family, have %+v", vip)
	}
}

// An enqueue whose wake-up was lost is found by the backstop scan.
func TestRegistrarBackstopFindsQueueWhoseWakeupWasLost(t *testing.T) {
	e := newRegistrarEnv(t)
	e.enqueue(e.quiet, "cust-lost")
	e.run(e.store.Families(), func(c *Config) { c.ScanEvery = 20 * time.Millisecond })
	if cfg := e.waitRegistered("cust-lost"); cfg.Family != "customers" {
		t.Fatalf("want cust-lost from family customers, have %+v", cfg)
	}
}

// Without the scan, the same lost wake-up leaves the queue unregistered
// until another enqueue: what the backstop is for. (The check that the
// registrar is alive is a later enqueue that is registered.)
func TestRegistrarWithoutBackstopMissesLostWakeup(t *testing.T) {
	e := newRegistrarEnv(t)
	e.enqueue(e.quiet, "cust-lost")
	e.run(e.store.Families(), nil)
	e.enqueue(e.store, "cust-heard")
	e.waitRegistered("cust-heard")
	if _, ok := e.config("cust-lost"); ok {
		t.Fatal("want cust-lost unregistered without the scan, have it registered")
	}
}

// racingRedis enqueues a message (without a wake-up) to victim right
// after the retire scripts ran, before the registry entries are deleted:
// the worst moment.
type racingRedis struct {
	FamilyRedis
	e      *registrarEnv
	victim string
	once   sync.Once
	raced  chan struct{}
}

func (r *racingRedis) RetireMany(ctx context.Context, qs []string, cutoff time.Time) ([]queue.QueueIdleness, error) {
	st, err := r.FamilyRedis.RetireMany(ctx, qs, cutoff)
	r.once.Do(func() {
		r.e.enqueue(r.e.quiet, r.victim)
		close(r.raced)
	})
	return st, err
}

// A queue of the family that stays empty past retire_after is removed
// from the registry, with its Redis route.
func TestRegistrarRetiresEmptyIdleQueue(t *testing.T) {
	e := newRegistrarEnv(t)
	ctx := context.Background()
	if _, err := e.zk.Queues().CreateMany(ctx, []drover.QueueConfig{e.fam.QueueFor("cust-idle"), e.fam.QueueFor("cust-busy")}); err != nil {
		t.Fatal(err)
	}
	e.enqueue(e.quiet, "cust-busy")
	if err := e.zk.Queues().Create(ctx, drover.QueueConfig{Name: "cust-own"}); err != nil {
		t.Fatal(err)
	}
	e.run(e.store.Families(), func(c *Config) { c.SweepEvery = 20 * time.Millisecond })
	e.clock.Add(30 * time.Minute)
	e.enqueue(e.store, "cust-probe") // registered: the registrar has run sweeps with the clock at +30m
	e.waitRegistered("cust-probe")
	if _, ok := e.config("cust-idle"); !ok {
		t.Fatal("cust-idle before retire_after: want it registered, have it retired")
	}
	e.clock.Add(time.Hour)
	waitUntil(t, "cust-idle to be retired", func() bool { _, ok := e.config("cust-idle"); return !ok })
	if _, ok := e.config("cust-busy"); !ok {
		t.Fatal("cust-busy holds a message: want it kept, have it retired")
	}
	if _, ok := e.config("cust-own"); !ok {
		t.Fatal("cust-own was configured on its own: want it kept, have it retired")
	}
}

// watchedRegistry reports each queue RetireMany removed.
type watchedRegistry struct {
	QueueRegistry
	retired chan string
}

func (r watchedRegistry) RetireMany(ctx context.Context, cands []coordinator.RetireCandidate, empty func(context.Context, []coordinator.RetireCandidate) ([]bool, error)) ([]bool, error) {
	done, err := r.QueueRegistry.RetireMany(ctx, cands, empty)
	for i, ok := range done {
		if ok {
			r.retired <- cands[i].Queue
		}
	}
	return done, err
}

// A message enqueued between the retire scripts and the registry deletes
// (with its wake-up lost) is not lost: the look after the deletes finds
// it and registers the queue again; the batch's other queues retire.
func TestRegistrarRetireNeverLosesConcurrentEnqueue(t *testing.T) {
	e := newRegistrarEnv(t)
	ctx := context.Background()
	names := []string{"cust-race"}
	for i := range 20 {
		names = append(names, fmt.Sprintf("cust-idle-%02d", i))
	}
	var cfgs []drover.QueueConfig
	for _, q := range names {
		cfgs = append(cfgs, e.fam.QueueFor(q))
	}
	if _, err := e.zk.Queues().CreateMany(ctx, cfgs); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(2 * time.Hour)
	racing := &racingRedis{FamilyRedis: e.store.Families(), e: e, victim: "cust-race", raced: make(chan struct{})}
	retired := make(chan string, len(names))
	e.run(racing, func(c *Config) {
		c.SweepEvery = 20 * time.Millisecond
		c.Registry.Queues = watchedRegistry{c.Registry.Queues, retired}
	})
	gone := map[string]bool{}
	for len(gone) < len(names) {
		select {
		case q := <-retired: // the registry entry is gone, after the message came
			gone[q] = true
		case <-time.After(time.Minute):
			t.Fatalf("gave up waiting for the retire of all of %d queues; have %d", len(names), len(gone))
		}
	}
	<-racing.raced
	cfg := e.waitRegistered("cust-race")
	if cfg.Family != "customers" {
		t.Fatalf("want cust-race registered again from its family, have %+v", cfg)
	}
	if busy, err := e.store.Families().HasMessages(ctx, "cust-race"); err != nil || !busy {
		t.Fatalf("want the message still in cust-race, have busy=%v err=%v", busy, err)
	}
	if _, ok := e.config("cust-idle-07"); ok {
		t.Fatal("cust-idle-07, idle in the same batch: want it retired, have it registered")
	}
}

// staleFamilies delivers the families as they were when the registrar
// started and never their changes: a family watch that lags.
type staleFamilies struct {
	FamilySource
	fams drover.Families
}

func (r staleFamilies) Watch(ctx context.Context) <-chan drover.Families {
	ch := make(chan drover.Families, 1)
	ch <- r.fams
	context.AfterFunc(ctx, func() { close(ch) })
	return ch
}

// A queue the registrar registers from a family configuration it has not
// yet seen change (ChangeFamily walked the registry before the queue was
// in it) is brought up to the new configuration after its registration.
func TestRegistrarCatchesUpWithFamilyChangeItHasNotSeen(t *testing.T) {
	e := newRegistrarEnv(t)
	ctx := context.Background()
	e.run(e.store.Families(), func(c *Config) {
		c.Registry.Families = staleFamilies{FamilySource: c.Registry.Families, fams: drover.Families{e.fam}}
	})
	next := e.fam
	next.Queue.RateLimit.PerSecond = 7
	if c, err := e.zk.Families().Change(ctx, next, -1); err != nil || c.Updated != 0 {
		t.Fatalf("ChangeFamily before any queue: want 0 updated, have %+v, %v", c, err)
	}
	e.enqueue(e.store, "cust-late")
	e.waitRegistered("cust-late")
	waitUntil(t, "cust-late to get the family's new rate limit", func() bool {
		cfg, _ := e.config("cust-late")
		return cfg.RateLimit.PerSecond == 7 && cfg.Family == "customers"
	})
}

// keysOf lists the Redis keys of queue q (every key of a queue carries
// its name as a hash tag).
func (e *registrarEnv) keysOf(q string) []string {
	e.t.Helper()
	keys, err := e.rdb.Keys(context.Background(), e.prefix+":{"+q+"}*").Result()
	if err != nil {
		e.t.Fatal(err)
	}
	return keys
}

// listed reports whether q is in the queue registry SET (drover:queues).
func (e *registrarEnv) listed(q string) bool {
	e.t.Helper()
	ok, err := e.store.Inspector().QueueKnown(context.Background(), q)
	if err != nil {
		e.t.Fatal(err)
	}
	return ok
}

// A queue the registrar retires leaves nothing in Redis: no key of its
// own (sequence, route, outcome records) and no entry in the queue
// registry SET. An enqueue after it, from a producer that remembers
// having listed the queue, brings it back: registered and listed again.
func TestRegistrarRetiredQueueLeavesNothingAndComesBack(t *testing.T) {
	e := newRegistrarEnv(t)
	ctx := context.Background()
	e.run(e.store.Families(), func(c *Config) { c.SweepEvery = 20 * time.Millisecond })
	e.enqueue(e.store, "cust-gone")
	e.waitRegistered("cust-gone")
	// As its owner would: run the message, trim it with its outcome
	// record, write the route.
	pos, err := e.store.Inspector().LastPosition(ctx, "cust-gone")
	if err != nil {
		t.Fatal(err)
	}
	done := []drover.Outcome{{ID: "m1", State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()}}
	if _, err := e.store.Log().TrimRecording(ctx, "cust-gone", pos, 0, done, drover.Outcomes{}); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.Set(ctx, e.prefix+":{cust-gone}:owner", e.prefix+":wakeup:m1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if keys := e.keysOf("cust-gone"); len(keys) < 3 || !e.listed("cust-gone") {
		t.Fatalf("before the retire: want cust-gone's sequence, route and outcome records, and its entry in the queue set; have %v, listed %v", keys, e.listed("cust-gone"))
	}

	e.clock.Add(2 * time.Hour)
	waitUntil(t, "cust-gone to be retired", func() bool { _, ok := e.config("cust-gone"); return !ok })
	if keys := e.keysOf("cust-gone"); len(keys) != 0 {
		t.Fatalf("after the retire: want no key of cust-gone in Redis, have %v", keys)
	}
	if e.listed("cust-gone") {
		t.Fatal("after the retire: want cust-gone out of the queue set, have it listed")
	}

	e.enqueue(e.store, "cust-gone") // this Store listed it before: it sends no SADD
	e.waitRegistered("cust-gone")
	waitUntil(t, "cust-gone to be listed again", func() bool { return e.listed("cust-gone") })
	if busy, err := e.store.Families().HasMessages(ctx, "cust-gone"); err != nil || !busy {
		t.Fatalf("want the new message in cust-gone, have busy=%v err=%v", busy, err)
	}
}
