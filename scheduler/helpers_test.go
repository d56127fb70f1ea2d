package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/scheduler/schedulertest"
	"github.com/hashicorp/go-hclog"
)

// fakeClock is the shared settable clock.
type fakeClock = testkit.Clock

func newClock(t time.Time) *fakeClock { return testkit.NewClock(t) }

// idempotentQueue is an Enqueuer that behaves like the real queue: an id
// it has seen is a no-op (duplicate). It keeps every accepted message.
type idempotentQueue struct {
	mu       sync.Mutex
	accepted map[string]*drover.Message
	order    []string
	calls    int
	check    func(ctx context.Context, m *drover.Message) error // optional
}

func newQueue() *idempotentQueue {
	return &idempotentQueue{accepted: make(map[string]*drover.Message)}
}

func (q *idempotentQueue) Enqueue(ctx context.Context, m *drover.Message) (bool, error) {
	if q.check != nil {
		if err := q.check(ctx, m); err != nil {
			return false, err
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls++
	if _, ok := q.accepted[m.ID]; ok {
		return true, nil
	}
	cp := *m
	q.accepted[m.ID] = &cp
	q.order = append(q.order, m.ID)
	return false, nil
}

// ids returns the accepted ids in acceptance order.
func (q *idempotentQueue) ids() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.order...)
}

func (q *idempotentQueue) get(id string) *drover.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.accepted[id]
}

func (q *idempotentQueue) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order)
}

func newScheduler(t *testing.T, st scheduler.Store, clock drover.Clock, enq scheduler.Enqueuer, lead scheduler.Leadership) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(scheduler.Config{
		Store: st, Enqueuer: enq, Leadership: lead, Clock: clock,
		Logger:       hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: testkit.NewWriter(t)}),
		PollInterval: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("new scheduler: %v", err)
	}
	return s
}

func tick(t *testing.T, s *scheduler.Scheduler, clock *fakeClock, at time.Time) {
	t.Helper()
	clock.Set(at)
	if _, err := s.Tick(context.Background()); err != nil {
		t.Fatalf("tick at %s: %v", at.Format(time.RFC3339), err)
	}
}

func slotID(name string, slot time.Time) string { return scheduler.SlotID(name, slot) }

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func mustAdd(t *testing.T, m *scheduler.Manager, def scheduler.Definition) {
	t.Helper()
	if err := m.Add(context.Background(), def); err != nil {
		t.Fatalf("add %s: %v", def.Name, err)
	}
}

func mustGet(t *testing.T, m *scheduler.Manager, name string) scheduler.Entry {
	t.Helper()
	e, err := m.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return e
}

func rawDef(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %v: %v", v, err))
	}
	return b
}

// eventually waits for cond (testkit.Eventually).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, what, cond)
}

var _ schedulertest.StoreCatalog = (*schedulertest.MemStore)(nil)
