package registrar

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/queue"
)

// visitCounter is a FamilyRedis that records the queues each CheckIdle
// call of the sweep visits, and the number of calls made when each queue
// retired.
type visitCounter struct {
	FamilyRedis
	mu      sync.Mutex
	checks  [][]string
	retired map[string]int // queue → CheckIdle calls made when it retired
}

func (r *visitCounter) CheckIdle(ctx context.Context, qs []string, cutoff time.Time) ([]queue.QueueIdleness, error) {
	r.mu.Lock()
	r.checks = append(r.checks, slices.Clone(qs))
	r.mu.Unlock()
	return r.FamilyRedis.CheckIdle(ctx, qs, cutoff)
}

func (r *visitCounter) calls() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.checks) }

func (r *visitCounter) onRetired(q, _ string) {
	r.mu.Lock()
	r.retired[q] = len(r.checks)
	r.mu.Unlock()
}

// registerIdle registers n queues of the family, never enqueued to (so in
// no retire index), and returns their names.
func (e *registrarEnv) registerIdle(n int) []string {
	e.t.Helper()
	names := make([]string, n)
	cfgs := make([]drover.QueueConfig, n)
	for i := range names {
		names[i] = fmt.Sprintf("cust-%05d", i)
		cfgs[i] = e.fam.QueueFor(names[i])
	}
	if _, err := e.zk.Queues().CreateMany(context.Background(), cfgs); err != nil {
		e.t.Fatal(err)
	}
	return names
}

// runThrough enqueues one message to q and trims it as its owner does
// after committing it (Log.TrimMany): the queue is empty again.
func (e *registrarEnv) runThrough(q string) {
	e.t.Helper()
	r, err := e.quiet.Producer().Enqueue(context.Background(), &drover.Message{Queue: q, Task: "t"})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, err := range e.quiet.Log().TrimMany(context.Background(), []drover.TrimRequest{{Queue: q, Offset: r.Position}}) {
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

// Issue 40: the retire sweep found idle keys only by walking the registry
// (2,000 a second), so a churning family of 100,000 keys retired 334 a
// second against 1,000 going idle. A trim that empties a queue now notes
// it in the retire index, and the sweep checks those: one step retires
// the emptied key among 3,000 registered ones, having checked it and the
// backstop's one bucket (SweepCount 1), not the rest. On the walk alone
// the step checks that bucket only, and the key waits for its turn.
func TestTheRetireSweepFindsAnEmptiedKeyWithoutVisitingTheRest(t *testing.T) {
	e := newRegistrarEnv(t)
	names := e.registerIdle(3000)
	emptied := names[len(names)/2]
	e.runThrough(emptied)
	clock := testkit.NewClock(time.Now().Add(2 * time.Hour)) // past retire_after
	counter := &visitCounter{FamilyRedis: e.store.Families(), retired: map[string]int{}}
	e.run(counter, func(c *Config) {
		c.Clock, c.SweepEvery, c.SweepCount, c.OnRetired = clock, time.Second, 1, counter.onRetired
	})
	testkit.Eventually(t, "the scan and sweep armed on the clock", func() bool { return clock.Timers() == 2 })
	// A tick while a step runs is skipped: a second CheckIdle means the
	// first step has ended.
	testkit.Eventually(t, "two sweep steps", func() bool {
		clock.Advance(time.Second)
		return counter.calls() >= 2
	})
	counter.mu.Lock()
	defer counter.mu.Unlock()
	first := counter.checks[0]
	if at, ok := counter.retired[emptied]; !ok || at != 1 {
		t.Fatalf("want %s retired by the first step (after 1 check), have retired=%v after %d checks; the first step checked %d queues",
			emptied, ok, at, len(first))
	}
	if !slices.Contains(first, emptied) || len(first) > 16 {
		t.Fatalf("the first step: want it to check %s and the backstop's one bucket (a few queues) of 3,000, have %d queues checked: %v",
			emptied, len(first), first)
	}
}

// Keys that went idle before the retire index existed (or whose entry is
// gone) still retire: the backstop walk checks every registered queue in
// turn.
func TestTheRetireSweepBackstopRetiresKeysTheIndexDoesNotHold(t *testing.T) {
	e := newRegistrarEnv(t)
	names := e.registerIdle(40)
	for _, q := range names {
		e.runThrough(q)
	}
	// As before the index: no entry.
	if err := e.store.Families().TidyRetireIndex(context.Background(), names, nil); err != nil {
		t.Fatal(err)
	}
	if due, err := e.store.Families().RetireCandidates(context.Background(), time.Now().Add(time.Hour), 100); err != nil || len(due) != 0 {
		t.Fatalf("want an empty retire index, have %v (%v)", due, err)
	}
	clock := testkit.NewClock(time.Now().Add(2 * time.Hour))
	retired := make(chan string, len(names))
	e.run(e.store.Families(), func(c *Config) {
		c.Clock, c.SweepEvery = clock, time.Second
		c.OnRetired = func(q, _ string) { retired <- q }
	})
	testkit.Eventually(t, "the scan and sweep armed on the clock", func() bool { return clock.Timers() == 2 })
	clock.Advance(time.Second) // one step: the walk of 500 covers the 40
	left := map[string]bool{}
	for _, q := range names {
		left[q] = true
	}
	testkit.Eventually(t, "every key retired by the backstop", func() bool {
		for {
			select {
			case q := <-retired:
				delete(left, q)
			default:
				if len(left) > 0 {
					// A step that ran before the registrar had the
					// registry walked nothing, and the next pass waits a
					// minute (minWalkPass): on a loaded machine the one
					// step above can be that one.
					clock.Advance(time.Minute)
				}
				return len(left) == 0
			}
		}
	})
}

// heldDrops is an OffsetDropper whose DropOffset waits until release is
// closed (a ZooKeeper slow to answer), noting the calls that began.
type heldDrops struct {
	OffsetDropper
	release chan struct{}
	began   chan string
}

func (r heldDrops) DropOffset(ctx context.Context, q string) (bool, error) {
	select {
	case r.began <- q:
	default:
	}
	select {
	case <-r.release:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return r.OffsetDropper.DropOffset(ctx, q)
}

// Issue 40: a sweep step ended with the offset nodes of the queues the
// step before retired, two thousand at a time in the churn bench, and
// the next step waited for them (most of a step's time). The drops run on
// a goroutine of their own: with every drop held, a key emptied after the
// first step still retires in the next one.
func TestTheRetireSweepDoesNotWaitForOffsetDrops(t *testing.T) {
	e := newRegistrarEnv(t)
	names := e.registerIdle(20)
	first, second := names[:10], names[10:]
	for _, q := range first {
		e.runThrough(q)
	}
	clock := testkit.NewClock(time.Now().Add(2 * time.Hour)) // past retire_after
	drops := heldDrops{release: make(chan struct{}), began: make(chan string, 1)}
	t.Cleanup(func() { close(drops.release) })
	retired := make(chan string, len(names))
	e.run(e.store.Families(), func(c *Config) {
		drops.OffsetDropper = c.Registry.Offsets
		c.Registry.Offsets = drops
		c.Clock, c.SweepEvery, c.SweepCount = clock, time.Second, 1
		c.OnRetired = func(q, _ string) { retired <- q }
	})
	testkit.Eventually(t, "the scan and sweep armed on the clock", func() bool { return clock.Timers() == 2 })
	waitRetired := func(qs []string) {
		t.Helper()
		left := map[string]bool{}
		for _, q := range qs {
			left[q] = true
		}
		testkit.Eventually(t, fmt.Sprintf("%d keys retired", len(qs)), func() bool {
			clock.Advance(time.Second)
			for {
				select {
				case q := <-retired:
					delete(left, q)
				default:
					return len(left) == 0
				}
			}
		})
	}
	waitRetired(first)
	testkit.Eventually(t, "the first keys' offset drops begun (and held)", func() bool {
		clock.Advance(time.Second)
		select {
		case <-drops.began:
			return true
		default:
			return false
		}
	})
	for _, q := range second {
		e.runThrough(q)
	}
	waitRetired(second)
}

// Issue 40: once a churn had retired, the backstop's walk checked every
// one of the 200 registered (busy, kept) keys every second: 1,600 Redis
// commands a second of an idle fleet, though each kept key is scored in
// the retire index at the time it may retire. A pass over a small
// registry now starts no sooner than minWalkPass after the last one: 40
// kept keys and a step a second for ten seconds cost one pass of checks.
func TestTheBackstopWalkDoesNotCircleASmallRegistryEveryStep(t *testing.T) {
	e := newRegistrarEnv(t)
	names := e.registerIdle(40) // never enqueued to: kept, their idle time starts at the first check
	clock := testkit.NewClock(time.Now())
	counter := &visitCounter{FamilyRedis: e.store.Families(), retired: map[string]int{}}
	e.run(counter, func(c *Config) {
		c.Clock, c.SweepEvery, c.OnRetired = clock, time.Second, counter.onRetired
	})
	testkit.Eventually(t, "the scan and sweep armed on the clock", func() bool { return clock.Timers() == 2 })
	for step := 1; step <= 10; step++ {
		clock.Advance(time.Second)
		// A step's CheckIdle, or none once the pass is done: wait until
		// the sweep timer is armed again (the step ended) before the next.
		testkit.Eventually(t, "the sweep armed again", func() bool { return clock.Timers() == 2 })
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	checked := map[string]int{}
	for _, qs := range counter.checks {
		for _, q := range qs {
			checked[q]++
		}
	}
	for _, q := range names {
		if checked[q] != 1 {
			t.Fatalf("ten steps within a minute: want each of the 40 kept keys checked once, have %s checked %d times (%d checks in all)",
				q, checked[q], len(counter.checks))
		}
	}
}

// Issue 40: a sweep step retires at most maxRetiresPerStep (2,000) and the
// next one waited for the next tick, so a step a little over a second
// long held retirement under the 1,000 a second a churning family asks
// (84–90% of the retirable keys in the churn bench). A step that read a
// full page of the retire index starts the next at once: 2,500 emptied
// keys retire after one tick of the clock.
func TestAFullRetireStepStartsTheNextAtOnce(t *testing.T) {
	e := newRegistrarEnv(t)
	const n = maxRetiresPerStep + 500
	names := e.registerIdle(n)
	for _, q := range names {
		e.runThrough(q)
	}
	clock := testkit.NewClock(time.Now().Add(2 * time.Hour)) // past retire_after
	var mu sync.Mutex
	retired := map[string]bool{}
	e.run(e.store.Families(), func(c *Config) {
		c.Clock, c.SweepEvery, c.SweepCount = clock, time.Second, 1
		c.OnRetired = func(q, _ string) { mu.Lock(); retired[q] = true; mu.Unlock() }
	})
	testkit.Eventually(t, "the scan and sweep armed on the clock", func() bool { return clock.Timers() == 2 })
	clock.Advance(time.Second) // one tick, and no other
	testkit.Eventually(t, fmt.Sprintf("%d keys retired after one tick", n), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(retired) == n
	})
}
