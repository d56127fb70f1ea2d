package queue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

var _ = addContractCases(contractCase{"CheckQueues", testCheckQueues})

// One amortised check finds the queues with messages after their offsets,
// those with messages still at or before them (stale: processed, not
// trimmed), and the due times of delayed messages, across many queues (several script
// calls, several Cluster slots).
func testCheckQueues(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	due := time.Now().Add(time.Hour)
	var queues []string
	var offsets []drover.Position
	for i := range 600 {
		queues = append(queues, fmt.Sprintf("idle-%03d", i))
		offsets = append(offsets, 0)
	}
	ready := mustEnqueue(t, s, msg("ready", ""))
	done := mustEnqueue(t, s, msg("done", ""))
	both := mustEnqueue(t, s, msg("both", ""))
	mustEnqueue(t, s, msg("both", ""))
	if _, err := s.Producer().EnqueueAt(ctx, msg("later", ""), due); err != nil {
		t.Fatal(err)
	}
	// Among the idle ones, so that on a Cluster the order of the slots
	// is not the order asked.
	queues = slices.Insert(queues, 300, "ready", "done", "later", "both")
	// done: everything processed, not trimmed (stale); both: one of two
	offsets = slices.Insert(offsets, 300, ready.Position-1, done.Position, 0, both.Position)

	checks, err := s.Log().CheckQueues(ctx, queues, offsets)
	if err != nil {
		t.Fatalf("CheckQueues: %v", err)
	}
	if len(checks) != len(queues) {
		t.Fatalf("checks: want one per queue (%d), have %d", len(queues), len(checks))
	}
	for i, c := range checks {
		if c.Queue != queues[i] {
			t.Fatalf("check %d: want the order of the queues asked (%s), have %s", i, queues[i], c.Queue)
		}
		wantReady, wantDue := c.Queue == "ready" || c.Queue == "both", c.Queue == "later"
		wantStale := c.Queue == "done" || c.Queue == "both"
		if c.Ready != wantReady || !c.NextDue.IsZero() != wantDue || c.Stale != wantStale {
			t.Fatalf("check of %s: want ready %v, due %v, stale %v; have %+v", c.Queue, wantReady, wantDue, wantStale, c)
		}
		if wantDue && c.NextDue.UnixMilli() != due.UnixMilli() {
			t.Fatalf("due time of later: want %v, have %v", due, c.NextDue)
		}
	}
	if _, err := s.Log().CheckQueues(ctx, queues, offsets[1:]); err == nil {
		t.Fatal("CheckQueues with an offset missing: want an error")
	}
	// A full pass covers every parked queue: it must not build and cache
	// their key names (about 500 bytes a queue, and the cache of the busy
	// queues' names emptied every 4,096).
	if _, ok := s.keys.cache.Load("idle-000"); ok {
		t.Fatal("CheckQueues cached the key names of a queue it only checked")
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
	if _, err := s.Producer().EnqueueAt(ctx, msg("later", ""), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Among the idle ones, so that on a Cluster the order of the slots
	// is not the order asked.
	queues = slices.Insert(queues, 700, "written", "later")

	// The heads are appended to the slice given, in the order asked.
	heads, err := s.Log().QueueHeads(ctx, queues, []drover.Position{-7})
	if err != nil {
		t.Fatalf("QueueHeads: %v", err)
	}
	if len(heads) != 1+len(queues) || heads[0] != -7 {
		t.Fatalf("heads: want the slice given (-7) and one per queue (%d), have %d starting %v", len(queues), len(heads), heads[:1])
	}
	for i, q := range queues {
		want := drover.Position(0)
		if q == "written" {
			want = b.Position
		}
		if h := heads[1+i]; h != want {
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
	if _, err := s.Log().QueueHeads(ctx, []string{"bad name"}, nil); err == nil {
		t.Fatal("QueueHeads of an invalid queue name: want an error")
	}
	// A :seq key that holds no position is an error naming the queue.
	if err := rdb.Set(ctx, s.keys.seq("garbled"), "x1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Log().QueueHeads(ctx, []string{"idle-0001", "garbled"}, nil); err == nil || !strings.Contains(err.Error(), `"garbled"`) {
		t.Fatalf("QueueHeads of a garbled :seq key: want an error naming the queue, have %v", err)
	}
}

// Defect (issue 14): the periodic backstop's head read made four objects
// per queue (a key string, its interface box, a string and a box per value
// of the reply) and a map of every queue: 100,746 allocations and 6 MB a
// read of 25,000 queues. Now the keys cost nothing per queue; what is left
// per queue is go-redis's reply (a string and its box per value), kept so
// that a Cluster's redirects are followed.
func TestQueueHeadsAllocatesPerMGETNotPerQueue(t *testing.T) {
	const n = 25000
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	s := newTestStore(t, rdb, nil)
	queues := setHeads(t, s, n)
	ctx := context.Background()
	heads := make([]drover.Position, 0, n)
	var err error
	allocs := testing.AllocsPerRun(3, func() {
		heads, err = s.Log().QueueHeads(ctx, queues, heads[:0])
	})
	if err != nil {
		t.Fatalf("QueueHeads: %v", err)
	}
	for i, h := range heads {
		if want := drover.Position(1000 + i); h != want {
			t.Fatalf("head of %s: want %d, have %d", queues[i], want, h)
		}
	}
	// 25 MGETs: a few objects each, and the reply's two per value.
	if limit := float64(2*n + n/headGroup*32); allocs > limit {
		t.Fatalf("a head read of %d queues: want at most %.0f allocations (2 per queue, 32 per MGET of %d), have %.0f", n, limit, headGroup, allocs)
	}
}

// setHeads sets the :seq keys of n queues, as the heads of queues written
// once and since parked are (queue i at 1000+i), and returns the queues.
func setHeads(tb testing.TB, s *Store, n int) []string {
	tb.Helper()
	ctx := context.Background()
	queues := make([]string, n)
	var keys []string
	pairs := make([]any, 0, 2*n)
	for i := range queues {
		queues[i] = fmt.Sprintf("parked-%05d", i)
		keys = append(keys, s.keys.seq(queues[i]))
		pairs = append(pairs, keys[i], 1000+i)
	}
	if err := s.rdb.MSet(ctx, pairs...).Err(); err != nil {
		tb.Fatalf("MSET: %v", err)
	}
	tb.Cleanup(func() {
		for len(keys) > 0 {
			k := min(len(keys), headGroup)
			s.rdb.Del(context.Background(), keys[:k]...)
			keys = keys[k:]
		}
	})
	return queues
}

// The backstop writes a queue's keys as queue and seq name them.
func TestWriteQueueKeyIsTheKeyName(t *testing.T) {
	k := &keyspace{prefix: "p"}
	for _, q := range []string{"a", "emails-eu", "x.y_z"} {
		qk := k.queue(q)
		for suffix, want := range map[string]string{"seq": k.seq(q), "log": qk.log, "delayed": qk.delayed} {
			var b strings.Builder
			k.writeQueueKey(&b, q, suffix)
			if b.String() != want || k.queueKeyLen(q, suffix) != len(want) {
				t.Fatalf("queue %s, %s: want %q (%d bytes), have %q (%d)", q, suffix, want, len(want), b.String(), k.queueKeyLen(q, suffix))
			}
		}
	}
}
