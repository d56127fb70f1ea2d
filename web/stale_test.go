package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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

// A stale snapshot stands in for a slow read, not for an absent ZooKeeper:
// with the console's session down, a page past SnapshotTTL answers 503
// naming ZooKeeper instead of the fleet as it was (found by
// TestDevConsoleOutlivesAZooKeeperFreeze on a loaded machine: a console
// that read the fleet just before the freeze showed it as current for the
// whole of ServeStale).
func TestStaleSnapshotIsNotServedWithoutZooKeeper(t *testing.T) {
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	var zkDown atomic.Bool
	r := newRigOn(t, testenv.ZooKeeper(t).Addrs, queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}},
		Config{SnapshotTTL: time.Second, ServeStale: time.Hour, SampleEvery: time.Hour, Now: clock.Now,
			ZooKeeper: func() error {
				if zkDown.Load() {
					return fmt.Errorf("%w (session lost)", ErrZooKeeperDown)
				}
				return nil
			}})
	r.configure("first")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.srv.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	if n := decode[Overview](t, r.want(200, "viewer", "GET", "/api/v1/overview", "")).Totals.Queues; n != 1 {
		t.Fatalf("want 1 queue, have %d", n)
	}
	zkDown.Store(true)
	if n := decode[Overview](t, r.want(200, "viewer", "GET", "/api/v1/overview", "")).Totals.Queues; n != 1 {
		t.Fatalf("within SnapshotTTL the snapshot answers whatever ZooKeeper's state: want 1 queue, have %d", n)
	}
	clock.Add(2 * time.Second) // stale, within ServeStale
	if b := r.want(503, "viewer", "GET", "/api/v1/overview", ""); !strings.Contains(b, "ZooKeeper") {
		t.Errorf("a stale snapshot without ZooKeeper: want 503 naming ZooKeeper, have %s", b)
	}
	zkDown.Store(false)
	r.want(200, "viewer", "GET", "/api/v1/overview", "")
}
