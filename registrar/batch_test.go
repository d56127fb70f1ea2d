package registrar

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/queue"
)

// roundTrips counts the requests a Redis client sends: a command or a
// pipeline each, not counting a new connection's handshake.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n != "hello" && n != "client" { // a new connection's handshake
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if cmds[0].Name() != "client" { // a new connection's handshake
			h.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// A churning family retires about 1,000 idle keys a second (the churn
// bench): one sweep step retires 1,000 idle queues, with a handful of
// Redis round trips (a pipeline of checks, one of retire scripts, one of
// looks). The sweep retired 100 a step, each several round trips on the
// registrar's loop, so 1,000 took ten steps. The clock is a test's: the
// step runs once, when the test advances it.
func TestRegistrarRetiresAThousandIdleQueuesInOneStep(t *testing.T) {
	e := newRegistrarEnv(t)
	ctx := context.Background()
	const n = 1000
	names := make([]string, n)
	cfgs := make([]drover.QueueConfig, n)
	for i := range names {
		names[i] = fmt.Sprintf("cust-%04d", i)
		cfgs[i] = e.fam.QueueFor(names[i])
	}
	if _, err := e.zk.Queues().CreateMany(ctx, cfgs); err != nil {
		t.Fatal(err)
	}
	// Their idle time starts now (a queue never enqueued to gets its :seq
	// at the first check); the registrar's clock is past retire_after.
	if _, err := e.store.Families().CheckIdle(ctx, names, time.Now()); err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock(time.Now().Add(2 * time.Hour))
	hooked, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hooked.Close() })
	trips := &roundTrips{}
	hooked.AddHook(trips)
	store, err := queue.New(queue.Config{Client: hooked, Prefix: e.prefix})
	if err != nil {
		t.Fatal(err)
	}
	var retired atomic.Int64
	e.runOn(store.Families(), Config{Clock: clock, SweepEvery: time.Second, ScanEvery: time.Hour,
		OnRetired: func(string, string) { retired.Add(1) }})
	testkit.Eventually(t, "the scan and sweep armed on the clock", func() bool { return clock.Timers() == 2 })
	before := trips.n.Load()
	clock.Advance(time.Second) // one sweep step
	testkit.Eventually(t, "1,000 idle queues retired by one sweep step", func() bool { return retired.Load() == n })
	if left, err := e.zk.Queues().Names(ctx); err != nil || len(left) != 0 {
		t.Fatalf("after the step: want no queue registered, have %d (%v)", len(left), err)
	}
	// A read of the retire index, a check pipeline, a retire pipeline, a
	// look pipeline; each pipeline may be sent twice when the server does
	// not know the script yet.
	if sent := trips.n.Load() - before; sent > 7 {
		t.Fatalf("one step of %d queues: want at most 7 Redis round trips, have %d", n, sent)
	}
}

// runOn runs a registrar on redis with cfg (Registry and Logger set
// here) until the test ends.
func (e *registrarEnv) runOn(redis FamilyRedis, cfg Config) {
	e.t.Helper()
	e.run(redis, func(c *Config) {
		c.Clock, c.SweepEvery, c.ScanEvery, c.OnRetired = cfg.Clock, cfg.SweepEvery, cfg.ScanEvery, cfg.OnRetired
		c.Logger = testkit.Logger(e.t, hclog.Warn)
	})
}

// lateEnqueue enqueues to victim, with its wake-up, after the sweep step's
// look at the retired queues found it empty, and holds the step until the
// registrar's loop has heard the wake-up (it registers a probe queue
// enqueued to after it; one channel delivers both in order): the loop
// hears of the message while the step that retired the queue still runs.
type lateEnqueue struct {
	FamilyRedis
	e      *registrarEnv
	victim string
	once   sync.Once
}

func (r *lateEnqueue) HasMessagesMany(ctx context.Context, qs []string) ([]bool, error) {
	busy, err := r.FamilyRedis.HasMessagesMany(ctx, qs)
	r.once.Do(func() {
		r.e.enqueue(r.e.store, r.victim)
		r.e.enqueue(r.e.store, "cust-probe")
		r.e.waitRegistered("cust-probe")
	})
	return busy, err
}

// A message enqueued after the sweep step's last look at a queue it
// retired, whose wake-up the registrar's loop hears while the step still
// runs (the queue still registered, as far as the loop knows: its
// registry watch lags), registers the queue again when the step ends: the
// wake-up is not dropped as one of a registered queue.
func TestRegistrarWakeupDuringARetireStepRegistersTheQueueAgain(t *testing.T) {
	e := newRegistrarEnv(t)
	e.frozen = true
	ctx := context.Background()
	if _, err := e.zk.Queues().CreateMany(ctx, []drover.QueueConfig{e.fam.QueueFor("cust-late")}); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(2 * time.Hour)
	late := &lateEnqueue{FamilyRedis: e.store.Families(), e: e, victim: "cust-late"}
	retired := make(chan string, 1)
	e.run(late, func(c *Config) {
		c.SweepEvery = 20 * time.Millisecond
		c.Registry.Queues = watchedRegistry{c.Registry.Queues, retired}
	})
	select {
	case <-retired:
	case <-time.After(time.Minute):
		t.Fatal("gave up waiting for the retire")
	}
	cfg := e.waitRegistered("cust-late")
	if cfg.Family != "customers" {
		t.Fatalf("want cust-late registered again from its family, have %+v", cfg)
	}
	if busy, err := e.store.Families().HasMessages(ctx, "cust-late"); err != nil || !busy {
		t.Fatalf("want the message still in cust-late, have busy=%v err=%v", busy, err)
	}
}

// reconfigureAfterScripts has an operator change victim's config right
// after the retire scripts ran, before the registry deletes.
type reconfigureAfterScripts struct {
	FamilyRedis
	e      *registrarEnv
	victim string
	once   sync.Once
}

func (r *reconfigureAfterScripts) RetireMany(ctx context.Context, qs []string, cutoff time.Time) ([]queue.QueueIdleness, error) {
	st, err := r.FamilyRedis.RetireMany(ctx, qs, cutoff)
	r.once.Do(func() {
		cfg := r.e.fam.QueueFor(r.victim)
		cfg.Concurrency = 9
		if _, err := r.e.zk.Queues().Update(ctx, cfg, -1); err != nil {
			r.e.t.Error(err)
		}
	})
	return st, err
}

// A queue an operator reconfigures while a sweep step retires it is kept,
// with the operator's config, and listed in the Redis queue set again (the
// retire script removed its entry); the step's other queues retire.
func TestRegistrarKeepsAQueueReconfiguredDuringItsRetire(t *testing.T) {
	e := newRegistrarEnv(t)
	ctx := context.Background()
	var cfgs []drover.QueueConfig
	for _, q := range []string{"cust-kept", "cust-x", "cust-y"} {
		cfgs = append(cfgs, e.fam.QueueFor(q))
	}
	if _, err := e.zk.Queues().CreateMany(ctx, cfgs); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(2 * time.Hour)
	retired := make(chan string, 3)
	e.run(&reconfigureAfterScripts{FamilyRedis: e.store.Families(), e: e, victim: "cust-kept"}, func(c *Config) {
		c.SweepEvery = 20 * time.Millisecond
		c.Registry.Queues = watchedRegistry{c.Registry.Queues, retired}
	})
	for range 2 {
		select {
		case q := <-retired:
			if q == "cust-kept" {
				t.Fatal("cust-kept, reconfigured during its retire: want it kept, have it retired")
			}
		case <-time.After(time.Minute):
			t.Fatal("gave up waiting for cust-x and cust-y to retire")
		}
	}
	cfg, ok := e.config("cust-kept")
	if !ok || cfg.Concurrency != 9 {
		t.Fatalf("cust-kept: want the operator's config (concurrency 9), have %+v (registered %v)", cfg, ok)
	}
	waitUntil(t, "cust-kept to be listed in the queue set again", func() bool { return e.listed("cust-kept") })
}
