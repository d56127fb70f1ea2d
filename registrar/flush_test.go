package registrar

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/queue"
)

// prefixFamily is a FamilySource with one family, prefix "cust-", whose
// Get waits for getGate (nil: at once) and then finds no family.
type prefixFamily struct {
	oneFamily
	getGate chan struct{}
}

func (f prefixFamily) Watch(ctx context.Context) <-chan drover.Families {
	ch := make(chan drover.Families, 1)
	ch <- drover.Families{{Name: "cust", Prefix: "cust-", Queue: drover.QueueConfig{
		Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}}}
	return ch
}

func (f prefixFamily) Get(ctx context.Context, _ string) (coordinator.FamilyEntry, error) {
	if f.getGate != nil {
		select {
		case <-f.getGate:
		case <-ctx.Done():
			return coordinator.FamilyEntry{}, ctx.Err()
		}
	}
	return coordinator.FamilyEntry{}, drover.ErrFamilyNotFound
}

// gatedCreates is a QueueRegistry whose CreateMany reports its names as
// it starts, waits for gate (nil: at once), and creates every queue.
type gatedCreates struct {
	noRegistry
	started chan []string
	gate    chan struct{}
}

func (g gatedCreates) CreateMany(ctx context.Context, cfgs []drover.QueueConfig) (int, error) {
	names := make([]string, len(cfgs))
	for i, c := range cfgs {
		names[i] = c.Name
	}
	g.started <- names
	if g.gate != nil {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return len(cfgs), nil
}

// wakeRedis is a FamilyRedis whose unowned wake-ups the test sends.
type wakeRedis struct {
	clockRedis
	wakeups chan queue.Wakeup
}

func (r *wakeRedis) UnownedWakeups(context.Context) (<-chan queue.Wakeup, error) {
	return r.wakeups, nil
}

// hear sends the registrar the wake-up of q and returns once its loop has
// taken it in: the wake-up channel is unbuffered, and a second wake-up
// (of a name under no family) is received only after the first was
// considered.
func (r *wakeRedis) hear(t *testing.T, q string) {
	t.Helper()
	for _, name := range []string{q, "other-probe"} {
		select {
		case r.wakeups <- queue.Wakeup{Queue: name}:
		case <-time.After(time.Minute):
			t.Fatalf("gave up sending the wake-up of %s", name)
		}
	}
}

// runFake runs a registrar on fakes until the test ends.
func runFake(t *testing.T, reg Registry, redis *wakeRedis, clock *testkit.Clock) *Registrar {
	t.Helper()
	r, err := New(Config{Registry: reg, Redis: redis, Clock: clock, ScanEvery: time.Hour, SweepEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r.Observe(coordinator.Registry{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for { // a flush armed on the clock is waited for as the term ends
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
				clock.Advance(time.Hour)
			}
		}
	})
	return r
}

func nextCreate(t *testing.T, started <-chan []string) []string {
	t.Helper()
	select {
	case names := <-started:
		return names
	case <-time.After(30 * time.Second):
		t.Fatal("gave up waiting for a CreateMany")
		return nil
	}
}

// A queue heard of while a registration runs is registered as soon as
// that registration ends when it has waited a whole batch window by then,
// not a window after it: timed from the registration's end, a new key
// behind a slow registration (300 ms at a churn's load) waited for it and
// then the window again (docs/decisions.md, "Issue 40: where a new key's
// first start waits").
func TestAQueueHeardDuringARegistrationGoesAsSoonAsItEnds(t *testing.T) {
	clock := testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	gate := make(chan struct{})
	var closeGate sync.Once
	t.Cleanup(func() { closeGate.Do(func() { close(gate) }) })
	started := make(chan []string, 2)
	redis := &wakeRedis{wakeups: make(chan queue.Wakeup)}
	reg := Registry{Queues: gatedCreates{started: started, gate: gate}, Families: prefixFamily{}, Offsets: noRegistry{}}
	runFake(t, reg, redis, clock)

	redis.hear(t, "cust-first")
	clock.Advance(DefaultBatch)
	if names := nextCreate(t, started); len(names) != 1 || names[0] != "cust-first" {
		t.Fatalf("first CreateMany: want [cust-first], have %v", names)
	}
	redis.hear(t, "cust-second") // while the first registration is held
	clock.Advance(2 * DefaultBatch)
	gate <- struct{}{} // the first registration ends
	if names := nextCreate(t, started); len(names) != 1 || names[0] != "cust-second" {
		t.Fatalf("second CreateMany: want [cust-second], have %v", names)
	}
}

// Queues just created go to the leader when CreateMany returns, not after
// the checks that follow it (the family read that catches up with a change
// and the Redis listing): a new key's placement waited for a ZooKeeper
// read and a Redis round trip it does not need.
func TestCreatedQueuesGoToTheLeaderBeforeTheFamilyCheck(t *testing.T) {
	clock := testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	getGate := make(chan struct{})
	t.Cleanup(func() { close(getGate) })
	started := make(chan []string, 1)
	redis := &wakeRedis{wakeups: make(chan queue.Wakeup)}
	reg := Registry{Queues: gatedCreates{started: started}, Families: prefixFamily{getGate: getGate}, Offsets: noRegistry{}}
	r := runFake(t, reg, redis, clock)

	redis.hear(t, "cust-new")
	clock.Advance(DefaultBatch)
	nextCreate(t, started)
	select {
	case <-r.Created():
	case <-time.After(30 * time.Second):
		t.Fatal("gave up waiting for the created notice while the family check is held")
	}
	if got := r.TakeCreated(); len(got) != 1 || got[0].Name != "cust-new" {
		t.Fatalf("created: want [cust-new], have %v", got)
	}
}
