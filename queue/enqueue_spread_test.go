package queue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// A batch over a fleet's keys, one message each, goes in one enqueue-spread
// call, and the wake-ups of the queues one member owns go to it as one
// PUBLISH, each carrying its message (docs/decisions.md, "Issue 43: a
// fleet's batch in one call, its wake-ups one per owner"). A route that
// reached nobody (its member is gone) is sent again, queue by queue, where
// :owner says, and the producer reads the route again.
func TestASpreadBatchWakesEachOwnerOnce(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, nil)
	subscribe := func(member string) (<-chan Wakeup, context.CancelFunc) {
		t.Helper()
		wctx, cancel := context.WithCancel(ctx)
		ch, err := s.Listener().Wakeups(wctx, member)
		if err != nil {
			t.Fatal(err)
		}
		return ch, cancel
	}
	m1, stop1 := subscribe("m1")
	m2, stop2 := subscribe("m2")
	defer stop2()
	const queues = 10
	owner := func(i int) string { return []string{"m1", "m2"}[i%2] }
	var names []string
	last := map[string]drover.Position{}
	for i := range queues {
		q := fmt.Sprintf("key-%02d", i)
		names = append(names, q)
		if err := s.Log().RouteWakeups(ctx, owner(i), q); err != nil {
			t.Fatal(err)
		}
		last[q] = mustEnqueue(t, s, msg(q, "")).Position // registers the queue; its next message has a previous one
	}
	take := func(ch <-chan Wakeup, n int, what string) map[string]Wakeup {
		t.Helper()
		got := map[string]Wakeup{}
		for len(got) < n {
			select {
			case w := <-ch:
				if w.Missed {
					t.Fatalf("%s: a Missed wake-up", what)
				}
				got[w.Queue] = w
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: %d wake-ups of %d within 30 s", what, len(got), n)
			}
		}
		return got
	}
	take(m1, queues/2, "the first messages, on m1")
	take(m2, queues/2, "the first messages, on m2")

	// A producer that has not sent to these queues yet: its first batch
	// asks for their routes (the first messages above taught s's).
	p := newTestStore(t, rdb, func(cfg *Config) { cfg.Prefix = s.keys.prefix }).Producer()
	batch := func(what string) map[string]EnqueueResult {
		t.Helper()
		var msgs []*drover.Message
		for _, q := range names {
			msgs = append(msgs, msg(q, ""))
		}
		res, err := p.EnqueueBatch(ctx, msgs)
		if err != nil || len(res) != queues {
			t.Fatalf("%s: want %d results, have %v, %v", what, queues, res, err)
		}
		out := map[string]EnqueueResult{}
		for i, r := range res {
			if r.Position <= last[names[i]] || r.Duplicate {
				t.Fatalf("%s: %s at %d after %d (%+v)", what, names[i], r.Position, last[names[i]], r)
			}
			out[names[i]] = r
		}
		return out
	}
	check := func(what string, res map[string]EnqueueResult, got map[string]Wakeup) {
		t.Helper()
		for q, w := range got {
			r := res[q]
			env, err := rdb.HGet(ctx, s.keys.queue(q).msg, r.ID).Result()
			if err != nil {
				t.Fatal(err)
			}
			if w.Entry == nil || w.Entry.Queue != q || w.Entry.ID != r.ID || w.Entry.Position != r.Position ||
				w.Prev != last[q] || string(w.Entry.Raw) != env {
				t.Fatalf("%s: %s's wake-up: want %s at %d after %d with its envelope, have prev %d, entry %+v", what, q, r.ID, r.Position, last[q], w.Prev, w.Entry)
			}
			last[q] = r.Position
		}
	}

	// The first batch asks for the routes (one GET a queue), the second
	// sends the routes it was answered.
	for _, round := range []struct {
		what string
		gets int
	}{{"asked", queues}, {"kept", 0}} {
		if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		res := batch(round.what)
		calls := commandCalls(t, rdb)
		if calls["evalsha"] != 1 || calls["publish"] != 2 || calls["get"] != round.gets || calls["zadd"] != queues {
			t.Errorf("%s routes: want one script call, a PUBLISH per owner (2), %d GETs and a ZADD a queue, have %v", round.what, round.gets, calls)
		}
		check(round.what+", m1", res, take(m1, queues/2, round.what+": m1"))
		check(round.what+", m2", res, take(m2, queues/2, round.what+": m2"))
	}

	// m1 is gone, its queues moved to m2; the producer still sends m1's
	// route: nobody receives that batch, so each of its queues is woken
	// where :owner says, and its route is read again.
	stop1()
	for range m1 {
	}
	for i, q := range names {
		if owner(i) == "m1" {
			if err := s.Log().RouteWakeups(ctx, "m2", q); err != nil {
				t.Fatal(err)
			}
		}
	}
	res := batch("moved")
	check("moved", res, take(m2, queues, "moved: m2"))
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	res = batch("moved, asked again")
	if calls := commandCalls(t, rdb); calls["get"] != queues/2 || calls["publish"] != 1 {
		t.Errorf("after a route reached nobody: want its queues' routes read again (%d GETs) and one PUBLISH, have %v", queues/2, calls)
	}
	check("moved, asked again", res, take(m2, queues, "moved, asked again: m2"))
}

// A queue with more messages than one script call takes keeps its order
// beside the queues of one message, whose enqueue-spread call goes first
// in the pipeline: only a queue's whole batch of one goes in it.
func TestASpreadBatchKeepsAQueuesOrderPastAScriptCall(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, nil)
	mustEnqueue(t, s, msg("lone", ""))
	mustEnqueue(t, s, msg("long", ""))
	batch := []*drover.Message{msg("lone", "")}
	for range maxScriptBatch + 1 {
		batch = append(batch, msg("long", ""))
	}
	res, err := s.Producer().EnqueueBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i := 2; i < len(res); i++ {
		if res[i].Position <= res[i-1].Position {
			t.Fatalf("message %d of long at %d, after %d: out of order", i, res[i].Position, res[i-1].Position)
		}
	}
	ids, err := rdb.ZRange(ctx, s.keys.queue("long").log, 1, -1).Result()
	if err != nil || len(ids) != maxScriptBatch+1 {
		t.Fatalf("long's log: %d entries, %v", len(ids), err)
	}
	for i, id := range ids {
		if id != res[i+1].ID {
			t.Fatalf("long's log holds %s at %d, want %s", id, i, res[i+1].ID)
		}
	}
}

// A new key's first message comes with its wake-up too (enqueue-spread v2,
// enqueue-one v6), after position 0, so that an owner which has read
// nothing takes it without a read: in a fleet of keys that arrive all the
// time, a read for every new key's first message was most of the reads.
// Its entry names no id in its header (the id leads the envelope's
// bytes), so a member of the previous release, which takes an entry
// without an id for the plain wake-up, reads the queue as it did. A queue
// without :seq whose log is not empty (no writer leaves one so; the script
// does not count on it) gets the plain wake-up: its owner reads.
func TestANewKeysFirstMessageComesWithItsWakeup(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, nil)
	raw := rdb.Subscribe(ctx, s.keys.batchChannel("m1"))
	defer raw.Close()
	if _, err := raw.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wake, err := s.Listener().Wakeups(wctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"new-a", "new-b", "unsequenced"}
	for _, q := range names {
		if err := s.Log().RouteWakeups(ctx, "m1", q); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.ZAdd(ctx, s.keys.queue("unsequenced").log, redis.Z{Score: 1, Member: "x"}).Err(); err != nil {
		t.Fatal(err)
	}
	var msgs []*drover.Message
	for _, q := range names {
		msgs = append(msgs, msg(q, ""))
	}
	res, err := s.Producer().EnqueueBatch(ctx, msgs)
	if err != nil || len(res) != len(names) {
		t.Fatalf("EnqueueBatch: %v, %v", res, err)
	}
	got := map[string]Wakeup{}
	for len(got) < len(names) {
		select {
		case w := <-wake:
			got[w.Queue] = w
		case <-time.After(30 * time.Second):
			t.Fatalf("%d wake-ups of %d within 30 s: %v", len(got), len(names), got)
		}
	}
	payload, err := raw.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range names[:2] {
		env, err := rdb.HGet(ctx, s.keys.queue(q).msg, res[i].ID).Result()
		if err != nil {
			t.Fatal(err)
		}
		w := got[q]
		if w.Entry == nil || w.Entry.Queue != q || w.Entry.ID != res[i].ID || w.Entry.Position != res[i].Position || w.Prev != 0 || string(w.Entry.Raw) != env {
			t.Fatalf("%s's first message (payload %q): want %s at %d after 0 with its envelope, have prev %d, entry %+v", q, payload.Payload, res[i].ID, res[i].Position, w.Prev, w.Entry)
		}
		head := fmt.Sprintf("%d 0 %d 0 %d\n%s%s\n", len(q), len(res[i].ID)+1+len(env), res[i].Position, q, res[i].ID)
		if !strings.Contains(payload.Payload, head) {
			t.Fatalf("%s's entry: want a header with no id (%q), have %q", q, head, payload.Payload)
		}
	}
	if w := got["unsequenced"]; w.Entry != nil {
		t.Fatalf("a queue whose log held a message without :seq: want the plain wake-up, have %+v", w.Entry)
	}
}

// parseWakeupBatch reads a batch channel's payload, entries that carry a
// message and plain ones, and keeps what it read before a malformed entry.
func TestParseWakeupBatchReadsEveryEntry(t *testing.T) {
	env := "{\"a\":\n1}"
	payload := ":4\n" +
		fmt.Sprintf("1 4 %d 100 250\n", len(env)) + "q" + "id 1" + env +
		"2 0 0 0 0\n" + "q2" +
		"3 2 2 7 9\n" + "q:3" + "ab" + "{}" +
		"2 0 5 0 40\n" + "q4" + "id\n{}"
	ws, err := parseWakeupBatch(payload)
	if err != nil || len(ws) != 4 {
		t.Fatalf("want 4 wake-ups, have %+v, %v", ws, err)
	}
	if w := ws[3]; w.Queue != "q4" || w.Prev != 0 || w.Entry == nil || w.Entry.Position != 40 || w.Entry.ID != "id" || string(w.Entry.Raw) != "{}" || w.Entry.Queue != "q4" {
		t.Fatalf("a queue's first message: have %+v (entry %+v)", w, w.Entry)
	}
	if w := ws[0]; w.Queue != "q" || w.Prev != 100 || w.Entry == nil || w.Entry.Position != 250 || w.Entry.ID != "id 1" || string(w.Entry.Raw) != env || w.Entry.Queue != "q" {
		t.Fatalf("a carried message: have %+v (entry %+v)", w, w.Entry)
	}
	if w := ws[1]; w.Queue != "q2" || w.Entry != nil || w.Prev != 0 {
		t.Fatalf("a plain entry: have %+v", w)
	}
	if w := ws[2]; w.Queue != "q:3" || w.Entry == nil || w.Entry.ID != "ab" || string(w.Entry.Raw) != "{}" {
		t.Fatalf("the third: have %+v", w)
	}
	for _, bad := range []string{
		":0\n",                     // no entries
		":x\n1 0 0 0 0\nq",         // no count
		":2\n1 0 0 0 0\nq",         // fewer entries than said
		":1\n5 0 0 0 0\nq",         // fewer bytes than said
		":1\n1 1 2 9 7\nqa{}",      // prev after pos
		":1\n1 1 2 0 7\nqa{}",      // no prev
		":1\n0 1 2 1 7\na{}",       // no queue
		":1\n1 0 0 0\nq",           // a field short
		":1\n1 -1 0 0 0\nq",        // a negative length
		":1\n1 0 0 0 0\nqtrailing", // bytes after the last entry
		":1\n1 0 3 0 7\nqa{}",      // a first message without its id's line
		":1\n1 0 3 0 7\nq\n{}",     // a first message with an empty id
		":1\n1 0 4 5 7\nqa\n{}",    // a first message after a position
		":1\n1 0 4 0 0\nqa\n{}",    // a first message at no position
	} {
		if ws, err := parseWakeupBatch(bad); err == nil {
			t.Errorf("%q: want an error, have %+v", bad, ws)
		}
	}
	ws, err = parseWakeupBatch(":2\n1 0 0 0 0\nq" + "1 0 0\nr")
	if err == nil || len(ws) != 1 || ws[0].Queue != "q" {
		t.Fatalf("a malformed second entry: want the first and an error, have %+v, %v", ws, err)
	}
}
