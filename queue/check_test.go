package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

var _ = addContractCases(contractCase{"CheckQueues", testCheckQueues})

// One amortised check finds the queues with messages after their offsets and
// the due times of delayed messages, across many queues (several script
// calls, several Cluster slots).
func testCheckQueues(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	due := time.Now().Add(time.Hour)
	offsets := map[string]drover.Position{}
	for i := range 600 {
		offsets[fmt.Sprintf("idle-%03d", i)] = 0
	}
	ready := mustEnqueue(t, s, msg("ready", ""))
	offsets["ready"] = ready.Position - 1
	done := mustEnqueue(t, s, msg("done", ""))
	offsets["done"] = done.Position // everything processed
	if _, err := s.EnqueueAt(ctx, msg("later", ""), due); err != nil {
		t.Fatal(err)
	}
	offsets["later"] = 0

	checks, err := s.CheckQueues(ctx, offsets)
	if err != nil {
		t.Fatalf("CheckQueues: %v", err)
	}
	if len(checks) != len(offsets) {
		t.Fatalf("checks: want one per queue (%d), have %d", len(offsets), len(checks))
	}
	for _, c := range checks {
		wantReady, wantDue := c.Queue == "ready", c.Queue == "later"
		if c.Ready != wantReady || !c.NextDue.IsZero() != wantDue {
			t.Fatalf("check of %s: want ready %v, due %v; have %+v", c.Queue, wantReady, wantDue, c)
		}
		if wantDue && c.NextDue.UnixMilli() != due.UnixMilli() {
			t.Fatalf("due time of later: want %v, have %v", due, c.NextDue)
		}
	}
}

// The slot a check groups a queue by is the one Redis Cluster computes for
// its keys (CLUSTER KEYSLOT).
func TestClusterSlot(t *testing.T) {
	for q, want := range map[string]uint16{"123456789": 12739, "foo": 12182} {
		if have := clusterSlot(q); have != want {
			t.Errorf("slot of {%s}: want %d, have %d", q, want, have)
		}
	}
}

var _ = addContractCases(contractCase{"QueueHeads", testQueueHeads})

// The periodic backstop's read: the last position of every queue asked,
// across several MGETs (and several Cluster slots), 0 for a queue never
// written; a delayed message moves no head until it is promoted.
func testQueueHeads(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	var queues []string
	for i := range 1500 {
		queues = append(queues, fmt.Sprintf("idle-%04d", i))
	}
	a := mustEnqueue(t, s, msg("written", ""))
	b := mustEnqueue(t, s, msg("written", ""))
	if _, err := s.EnqueueAt(ctx, msg("later", ""), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	queues = append(queues, "written", "later")

	heads, err := s.QueueHeads(ctx, queues)
	if err != nil {
		t.Fatalf("QueueHeads: %v", err)
	}
	if len(heads) != len(queues) {
		t.Fatalf("heads: want one per queue (%d), have %d", len(queues), len(heads))
	}
	for q, h := range heads {
		want := drover.Position(0)
		if q == "written" {
			want = b.Position
		}
		if h != want {
			t.Fatalf("head of %s: want %d, have %d", q, want, h)
		}
	}
	if b.Position <= a.Position {
		t.Fatalf("positions do not grow: %d then %d", a.Position, b.Position)
	}
	// The backstop reads every parked queue's head: it must not build and
	// cache their key names (garbage per queue per check, and the cache
	// of the busy queues' names emptied).
	if _, ok := s.keys.cache.Load("idle-0000"); ok {
		t.Fatal("QueueHeads cached the key names of a queue it only read the head of")
	}
	if _, err := s.QueueHeads(ctx, []string{"bad name"}); err == nil {
		t.Fatal("QueueHeads of an invalid queue name: want an error")
	}
}
