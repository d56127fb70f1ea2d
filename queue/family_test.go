package queue

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

var _ = addContractCases(contractCase{"ScanQueuesWithMessagesFullPass", testScanFullPass})

// A full pass of the backstop scan, taken in small steps, finds every queue
// holding messages; on a Redis Cluster the queues' keys land on every
// master and the one cursor walks them all (it used to scan one node and
// miss the queues of the others).
func testScanFullPass(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	want := map[string]bool{}
	for i := range 60 {
		q := fmt.Sprintf("scan-%02d", i)
		mustEnqueue(t, s, msg(q, ""))
		want[q] = true
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		masters := map[string]bool{}
		for q := range want {
			c, err := cc.MasterForKey(ctx, s.keys.prefix+":{"+q+"}:msg")
			if err != nil {
				t.Fatal(err)
			}
			masters[c.Options().Addr] = true
		}
		if len(masters) < 3 {
			t.Fatalf("the test's queues should land on the 3 masters, they land on %d", len(masters))
		}
	}
	found := map[string]bool{}
	var cursor uint64
	steps := 0
	for {
		step, err := s.Families().ScanQueuesWithMessages(ctx, cursor, 10)
		if err != nil {
			t.Fatal(err)
		}
		steps++
		for _, q := range step.Queues {
			found[q] = true
		}
		if cursor = step.Cursor; cursor == 0 {
			break
		}
		if steps > 100_000 {
			t.Fatal("the scan never ends")
		}
	}
	for q := range want {
		if !found[q] {
			t.Errorf("a full pass of %d steps missed %s (found %d of %d)", steps, q, len(found), len(want))
		}
	}
	for q := range found {
		if !want[q] {
			t.Errorf("the scan found %s, never enqueued to under this prefix", q)
		}
	}
}

var _ = addContractCases(contractCase{"RetireLeavesNoKeys", testRetireLeavesNoKeys})

// queueKeysIn lists the keys of queue q in Redis (on a Cluster, of every
// master): what a retired queue leaves.
func queueKeysIn(t *testing.T, rdb redis.UniversalClient, s *Store, q string) []string {
	t.Helper()
	ctx := context.Background()
	pattern := s.keys.prefix + ":{" + q + "}*"
	var out []string
	scan := func(c redis.Cmdable) error {
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			out = append(out, it.Val())
		}
		return it.Err()
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(c)
		})
	} else {
		err = scan(rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// A queue retired leaves nothing in Redis: no key of its own (outcome
// records, sequence, route, expired dedupe ids included) and no entry in
// the queue registry SET, on every deployment (on a Cluster the entry goes
// after the script). A queue holding an id inside its dedupe window is
// kept. An enqueue after the retire starts the queue anew.
func testRetireLeavesNoKeys(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	inSet := func(q string) bool {
		t.Helper()
		ok, err := s.Inspector().QueueKnown(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	// Run one message through q: enqueued, run, trimmed with its outcome
	// record, routed to an owner; a caller-chosen id as well.
	through := func(q string) {
		t.Helper()
		r := mustEnqueue(t, s, msg(q, "keyed-1"))
		out := []drover.Outcome{{ID: "keyed-1", State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()}}
		if _, err := s.Log().TrimRecording(ctx, q, r.Position, 0, out, drover.Outcomes{}); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, s.keys.queue(q).owner, "somewhere", 0).Err(); err != nil {
			t.Fatal(err)
		}
		// A start recorded of a message no trim reached (a retry whose
		// dead letter was purged, say): its :attempts field is left.
		if _, err := s.Log().RecordStarts(ctx, []string{q}, []string{"left-behind"}); err != nil {
			t.Fatal(err)
		}
	}
	through("ret-gone")
	through("ret-kept")
	// ret-gone's caller-chosen id is past its dedupe window.
	if err := rdb.ZAdd(ctx, s.keys.queue("ret-gone").seen, redis.Z{Score: 1, Member: "keyed-1"}).Err(); err != nil {
		t.Fatal(err)
	}
	if keys := queueKeysIn(t, rdb, s, "ret-gone"); len(keys) < 4 || !inSet("ret-gone") {
		t.Fatalf("before the retire: want ret-gone's seq, owner, seen and outcome records, and its registry entry; have %v (in the set: %v)", keys, inSet("ret-gone"))
	}

	cutoff := time.Now().Add(time.Hour) // the last enqueues are before it
	if st, err := s.Families().Retire(ctx, "ret-gone", cutoff); err != nil || st != QueueIdle {
		t.Fatalf("retire ret-gone: want idle, have %v, %v", st, err)
	}
	if keys := queueKeysIn(t, rdb, s, "ret-gone"); len(keys) != 0 {
		t.Fatalf("after the retire: want no key of ret-gone, have %v", keys)
	}
	if inSet("ret-gone") {
		t.Fatalf("after the retire: want ret-gone out of %s, have it listed", s.keys.queues())
	}

	if st, err := s.Families().Retire(ctx, "ret-kept", cutoff); err != nil || st != QueueKept {
		t.Fatalf("retire ret-kept, holding an id inside its dedupe window: want kept, have %v, %v", st, err)
	}
	if r, err := s.Producer().Enqueue(ctx, msg("ret-kept", "keyed-1")); err != nil || !r.Duplicate {
		t.Fatalf("enqueue ret-kept's id again inside its window: want a duplicate, have %+v, %v", r, err)
	}
	if !inSet("ret-kept") || len(queueKeysIn(t, rdb, s, "ret-kept")) == 0 {
		t.Fatal("ret-kept was kept: want its keys and its registry entry")
	}

	// Back: the same id runs anew; the registrar lists the queue again
	// (this producer remembers having added it, and does not).
	r := mustEnqueue(t, s, msg("ret-gone", "keyed-1"))
	if r.Duplicate || r.Position == 0 {
		t.Fatalf("enqueue after the retire: want a new message, have %+v", r)
	}
	if err := s.Families().AddQueueNames(ctx, []string{"ret-gone"}); err != nil || !inSet("ret-gone") {
		t.Fatalf("AddQueueNames: want ret-gone in the set, have %v, %v", inSet("ret-gone"), err)
	}
}

// enqueueBeforeSRem enqueues to a queue just before the command that
// removes it from the queue set: a message coming in between the retire
// script and the removal, on a Redis Cluster.
type enqueueBeforeSRem struct {
	set     string
	enqueue func()
}

func (h enqueueBeforeSRem) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h enqueueBeforeSRem) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h enqueueBeforeSRem) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); cmd.Name() == "srem" && len(args) > 1 && args[1] == h.set {
			h.enqueue()
		}
		return next(ctx, cmd)
	}
}

// On a Redis Cluster the queue set's entry goes after the retire script;
// a message that came in meanwhile keeps it (the entry is added back).
func TestRetireOnClusterKeepsTheEntryOfAQueueEnqueuedToMeanwhile(t *testing.T) {
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
	r := mustEnqueue(t, producer, msg("ret-race", ""))
	if _, err := producer.Log().Trim(ctx, "ret-race", r.Position, 0); err != nil {
		t.Fatal(err)
	}
	var raced bool
	hooked.AddHook(enqueueBeforeSRem{set: retirer.keys.queues(), enqueue: func() {
		mustEnqueue(t, producer, msg("ret-race", ""))
		raced = true
	}})
	st, err := retirer.Families().Retire(ctx, "ret-race", time.Now().Add(time.Hour))
	if err != nil || st != QueueIdle || !raced {
		t.Fatalf("retire: want idle, with a message enqueued before the set's entry went; have %v, %v (raced %v)", st, err, raced)
	}
	if listed, err := producer.Inspector().QueueKnown(ctx, "ret-race"); err != nil || !listed {
		t.Fatalf("a message came in after the retire script: want ret-race still in the queue set, have %v, %v", listed, err)
	}
}
