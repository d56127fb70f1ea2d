package registrar

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/queue"
)

// oneFamily is a FamilySource with one family and nothing else.
type oneFamily struct{}

func (oneFamily) Watch(ctx context.Context) <-chan drover.Families {
	ch := make(chan drover.Families, 1)
	ch <- drover.Families{{Name: "cust"}}
	return ch
}
func (oneFamily) Get(context.Context, string) (coordinator.FamilyEntry, error) {
	return coordinator.FamilyEntry{}, errors.New("fake: no family read")
}
func (oneFamily) Reapply(context.Context, drover.FamilyConfig, []drover.QueueConfig) (int, int, error) {
	return 0, 0, errors.New("fake: no family reapplied")
}

// noRegistry is a QueueRegistry and OffsetDropper that writes nothing.
type noRegistry struct{}

func (noRegistry) CreateMany(context.Context, []drover.QueueConfig) (int, error) {
	return 0, errors.New("fake: no registry")
}
func (noRegistry) RetireMany(context.Context, []coordinator.RetireCandidate, func(context.Context, []coordinator.RetireCandidate) ([]bool, error)) ([]bool, error) {
	return nil, errors.New("fake: no registry")
}
func (noRegistry) DropOffset(context.Context, string) (bool, error) {
	return false, errors.New("fake: no registry")
}

// clockRegistry is a Registry with one family and nothing else.
var clockRegistry = Registry{Queues: noRegistry{}, Families: oneFamily{}, Offsets: noRegistry{}}

// clockRedis is a FamilyRedis that counts subscriptions and scans; the
// first failSubscribe subscriptions fail.
type clockRedis struct {
	mu            sync.Mutex
	failSubscribe int
	subscribes    int
	scans         int
}

func (r *clockRedis) UnownedWakeups(context.Context) (<-chan queue.Wakeup, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subscribes++
	if r.failSubscribe > 0 {
		r.failSubscribe--
		return nil, errors.New("fake: redis away")
	}
	return make(chan queue.Wakeup), nil
}
func (r *clockRedis) ScanQueuesWithMessages(context.Context, uint64, int64) (queue.ScanStep, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scans++
	return queue.ScanStep{}, nil
}
func (r *clockRedis) CheckIdle(context.Context, []string, time.Time) ([]queue.QueueIdleness, error) {
	return nil, nil
}
func (r *clockRedis) RetireMany(context.Context, []string, time.Time) ([]queue.QueueIdleness, error) {
	return nil, nil
}
func (r *clockRedis) HasMessagesMany(context.Context, []string) ([]bool, error) { return nil, nil }
func (r *clockRedis) AddQueueNames(context.Context, []string) error             { return nil }
func (r *clockRedis) RetireCandidates(context.Context, time.Time, int) ([]queue.EmptiedQueue, error) {
	return nil, nil
}
func (r *clockRedis) TidyRetireIndex(context.Context, []string, []queue.EmptiedQueue) error {
	return nil
}

func (r *clockRedis) counts() (subscribes, scans int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.subscribes, r.scans
}

// Defect (issue 42): the registrar measured idle times by its injected
// Now, but waited on the wall clock: its subscription backoff, flush, scan
// and sweep could not be driven by a test's clock. Every wait now runs on
// Config.Clock: a failed subscription is retried when the clock passes the
// backoff, and the backstop scan runs each time it passes ScanEvery.
func TestTheRegistrarWaitsOnItsClock(t *testing.T) {
	clock := testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	redis := &clockRedis{failSubscribe: 1}
	r, err := New(Config{Registry: clockRegistry, Redis: redis, Clock: clock, ScanEvery: time.Second, SweepEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r.Observe(coordinator.Registry{}) // a registry snapshot, taken as the term starts: the scan has work
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	testkit.Eventually(t, "the subscription's backoff armed on the clock", func() bool { return clock.Timers() == 1 })
	if subs, _ := redis.counts(); subs != 1 {
		t.Fatalf("before the clock passed the backoff: want 1 subscription, have %d", subs)
	}
	clock.Advance(100 * time.Millisecond) // the first backoff
	// Subscribed: the scan and the sweep are armed (the flush and the
	// catch-up wait for work).
	testkit.Eventually(t, "the scan and sweep armed on the clock", func() bool { return clock.Timers() == 2 })
	if subs, _ := redis.counts(); subs != 2 {
		t.Fatalf("after the backoff: want 2 subscriptions, have %d", subs)
	}
	for want := 1; want <= 3; want++ {
		clock.Advance(time.Second)
		testkit.Eventually(t, "a scan per ScanEvery of the clock", func() bool { _, scans := redis.counts(); return scans == want })
		testkit.Eventually(t, "the scan armed again", func() bool { return clock.Timers() == 2 })
	}
}
