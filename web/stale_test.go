package web

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// While Run runs, a snapshot past SnapshotTTL but within ServeStale is
// answered at once (without the queue added since), and Run reads a fresh
// one in the background that the next answers show.
func TestStaleSnapshotIsServedWhileRunRefreshes(t *testing.T) {
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := newRigOn(t, testenv.ZooKeeper(t).Addrs, queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}},
		Config{SnapshotTTL: time.Second, ServeStale: time.Hour, SampleEvery: time.Hour, Now: clock.Now})
	r.configure("first")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.srv.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	queues := func() int {
		return decode[Overview](t, r.want(200, "viewer", "GET", "/api/v1/overview", "")).Totals.Queues
	}
	if n := queues(); n != 1 {
		t.Fatalf("want 1 queue, have %d", n)
	}
	r.configure("second")
	clock.Add(2 * time.Second) // stale, within ServeStale
	if n := queues(); n != 1 {
		t.Fatalf("a stale snapshot: want it answered as it was (1 queue), have %d", n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for queues() != 2 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not refresh the stale snapshot within 30 s")
		}
		time.Sleep(20 * time.Millisecond) // polling, not synchronisation
	}
}
