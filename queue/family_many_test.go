package queue

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

var _ = addContractCases(contractCase{"RetireManyAnswersEachQueue", testRetireMany})

// RetireMany answers for each queue as Retire would: an idle one loses
// every key and its queue set entry, a busy one keeps both, one enqueued
// to after the cutoff is kept (on a Redis Cluster the entries go after the scripts).
func testRetireMany(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	var qs []string
	want := map[string]QueueIdleness{}
	for i := range 30 {
		q := fmt.Sprintf("many-%02d", i)
		qs = append(qs, q)
		r := mustEnqueue(t, s, msg(q, ""))
		want[q] = QueueBusy // a message pending
		if i%2 == 0 {
			// idle: its one message ran
			if _, err := s.Log().Trim(ctx, q, r.Position, 0); err != nil {
				t.Fatal(err)
			}
			want[q] = QueueIdle
		}
	}
	st, err := s.Families().RetireMany(ctx, qs, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range qs {
		w := want[q]
		if st[i] != w {
			t.Errorf("RetireMany of %s: want %v, have %v", q, w, st[i])
		}
		listed, err := s.Inspector().QueueKnown(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if listed != (w != QueueIdle) {
			t.Errorf("%s after RetireMany (%v): want listed %v, have %v", q, w, w != QueueIdle, listed)
		}
		if keys := queueKeysIn(t, rdb, s, q); (len(keys) == 0) != (w == QueueIdle) {
			t.Errorf("%s after RetireMany (%v): have keys %v", q, w, keys)
		}
	}
	// A queue enqueued to after the cutoff is kept.
	r := mustEnqueue(t, s, msg("many-recent", ""))
	if _, err := s.Log().Trim(ctx, "many-recent", r.Position, 0); err != nil {
		t.Fatal(err)
	}
	st, err = s.Families().RetireMany(ctx, []string{"many-recent", "many-00"}, time.Now().Add(-time.Hour))
	if err != nil || st[0] != QueueKept {
		t.Fatalf("RetireMany of a queue enqueued to after the cutoff: want kept, have %v, %v", st, err)
	}
}

// pipelines counts the requests sent: a command or a pipeline each.
type pipelines struct{ n atomic.Int64 }

func (h *pipelines) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *pipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *pipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

// RetireMany of 1,000 queues is one round trip to a standalone Redis once
// the server knows the script (the registrar's sweep retires a second's
// idle keys at once), and HasMessagesMany of them one more.
func TestRetireManyIsOnePipeline(t *testing.T) {
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	qs := make([]string, 1000)
	for i := range qs {
		qs[i] = fmt.Sprintf("pipe-%04d", i)
	}
	if _, err := s.Families().CheckIdle(ctx, qs, time.Now()); err != nil { // gives them a :seq; loads the script
		t.Fatal(err)
	}
	h := &pipelines{}
	rdb.AddHook(h)
	st, err := s.Families().RetireMany(ctx, qs, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range st {
		if x != QueueIdle {
			t.Fatalf("%s: want idle, have %v", qs[i], x)
		}
	}
	if n := h.n.Load(); n != 1 {
		t.Fatalf("RetireMany of 1,000 queues: want 1 round trip, have %d", n)
	}
	busy, err := s.Families().HasMessagesMany(ctx, qs)
	if err != nil || len(busy) != len(qs) || busy[0] {
		t.Fatalf("HasMessagesMany after the retire: want %d queues empty, have %v, %v", len(qs), busy[:min(3, len(busy))], err)
	}
	if n := h.n.Load(); n != 2 {
		t.Fatalf("HasMessagesMany of 1,000 queues: want 1 more round trip, have %d in all", n)
	}
}

// On a Redis Cluster the queue set's entries go after the scripts, in one
// SREM; a queue enqueued to meanwhile gets its entry back, the others not.
func TestRetireManyOnClusterKeepsTheEntryOfAQueueEnqueuedToMeanwhile(t *testing.T) {
	addrs := testenv.RedisCluster(t).Addrs
	plain := testClient(t, ClientOptions{Addrs: addrs, Cluster: true})
	prefix := testenv.Prefix(t)
	producer, err := New(Config{Client: plain, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	hooked := testClient(t, ClientOptions{Addrs: addrs, Cluster: true})
	retirer, err := New(Config{Client: hooked, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	qs := []string{"race-a", "race-b", "race-c", "race-d"}
	for _, q := range qs {
		r := mustEnqueue(t, producer, msg(q, ""))
		if _, err := producer.Log().Trim(ctx, q, r.Position, 0); err != nil {
			t.Fatal(err)
		}
	}
	var raced bool
	hooked.AddHook(enqueueBeforeSRem{set: retirer.keys.queues(), enqueue: func() {
		mustEnqueue(t, producer, msg("race-c", ""))
		raced = true
	}})
	st, err := retirer.Families().RetireMany(ctx, qs, time.Now().Add(time.Hour))
	if err != nil || !raced {
		t.Fatalf("retire: have %v, %v (raced %v)", st, err, raced)
	}
	for i, q := range qs {
		if st[i] != QueueIdle {
			t.Errorf("%s: want idle, have %v", q, st[i])
		}
		listed, err := producer.Inspector().QueueKnown(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if want := q == "race-c"; listed != want {
			t.Errorf("%s in the queue set after the retire: want %v, have %v", q, want, listed)
		}
	}
}
