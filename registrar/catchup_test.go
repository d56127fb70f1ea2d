package registrar

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/queue"
)

// pagedRedis is a FamilyRedis whose keyspace the scan walks in three
// steps (cursor 0 → 1 → 2 → 0); the queues holding messages on each page
// are set by the test. It records the cursor of every scan step.
type pagedRedis struct {
	clockRedis
	wakeups chan queue.Wakeup
	mu      sync.Mutex
	pages   [3][]string
	cursors []uint64
}

func (r *pagedRedis) UnownedWakeups(context.Context) (<-chan queue.Wakeup, error) {
	return r.wakeups, nil
}

func (r *pagedRedis) ScanQueuesWithMessages(_ context.Context, cursor uint64, _ int64) (queue.ScanStep, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cursors = append(r.cursors, cursor)
	return queue.ScanStep{Queues: slices.Clone(r.pages[cursor]), Cursor: (cursor + 1) % 3}, nil
}

func (r *pagedRedis) scanCursors() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.cursors)
}

// catchUpRegistry is a QueueRegistry and FamilySource with the family
// cust- that records the queues it is asked to create.
type catchUpRegistry struct {
	noRegistry
	oneFamily
	mu      sync.Mutex
	created []string
}

func (r *catchUpRegistry) Watch(context.Context) <-chan drover.Families {
	ch := make(chan drover.Families, 1)
	ch <- drover.Families{{Name: "cust", Prefix: "cust-"}}
	return ch
}

func (r *catchUpRegistry) CreateMany(_ context.Context, cfgs []drover.QueueConfig) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cfgs {
		r.created = append(r.created, c.Name)
	}
	return len(cfgs), nil
}

func (r *catchUpRegistry) Get(context.Context, string) (coordinator.FamilyEntry, error) {
	return coordinator.FamilyEntry{}, drover.ErrFamilyNotFound
}

func (r *catchUpRegistry) has(q string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.created, q)
}

// Issue 40 (first starts during churn, a 21 s tail in two of eight smoke
// runs): after a lost wake-up the registrar's catch-up scan ran from the
// backstop's cursor to the end of the keyspace, so a new queue whose keys
// lay before that cursor waited for the next slow pass. The catch-up now
// walks a whole pass from the start: the queue is registered at once.
func TestAfterALostWakeupTheCatchUpScansAWholePass(t *testing.T) {
	clock := testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	redis := &pagedRedis{wakeups: make(chan queue.Wakeup, 4)}
	reg := &catchUpRegistry{}
	r, err := New(Config{Registry: Registry{Queues: reg, Families: reg, Offsets: reg}, Redis: redis, Clock: clock,
		Batch: 50 * time.Millisecond, ScanEvery: time.Second, SweepEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r.Observe(coordinator.Registry{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	testkit.Eventually(t, "the scan and sweep armed on the clock", func() bool { return clock.Timers() == 2 })
	clock.Advance(time.Second) // the backstop's first step: page 0, empty
	testkit.Eventually(t, "the backstop's first step", func() bool { return len(redis.scanCursors()) == 1 })
	// A new queue on page 0, behind the backstop's cursor, its wake-up lost.
	redis.mu.Lock()
	redis.pages[0] = []string{"cust-lost"}
	redis.mu.Unlock()
	redis.wakeups <- queue.Wakeup{Missed: true}
	testkit.Eventually(t, "the catch-up armed", func() bool { return clock.Timers() == 3 })
	clock.Advance(50 * time.Millisecond)
	testkit.Eventually(t, "the catch-up's first step", func() bool { return len(redis.scanCursors()) == 2 })
	if c := redis.scanCursors(); c[1] != 0 {
		t.Fatalf("the catch-up after a lost wake-up: want it to start a whole pass at cursor 0, have cursor %d (steps %v)", c[1], c)
	}
	// Found by that step: registered a batch later, long before the
	// backstop's next step.
	testkit.Eventually(t, "the registration's batch armed (beside the scan, sweep and catch-up)", func() bool { return clock.Timers() == 4 })
	clock.Advance(50 * time.Millisecond)
	testkit.Eventually(t, "cust-lost registered after the catch-up found it", func() bool { return reg.has("cust-lost") })
}
