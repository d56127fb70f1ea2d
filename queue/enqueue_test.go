package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(
	contractCase{"ConcurrentEnqueue", testConcurrentEnqueue},
	contractCase{"EnqueueBatch", testEnqueueBatch},
	contractCase{"EnqueueBatchAt", testEnqueueBatchAt},
	contractCase{"IdempotentEnqueue", testIdempotentEnqueue},
	contractCase{"DedupeWindowExpiry", testDedupeWindowExpiry},
	contractCase{"EnqueueRejectsInvalid", testEnqueueRejectsInvalid},
	contractCase{"Wakeups", testWakeups},
)

// 10,000 messages from 4 goroutines into one queue: positions strictly
// increase in log order, every message is read back exactly once, at the
// position Enqueue returned.
func testConcurrentEnqueue(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	const workers, each = 4, 2500
	results := make([][]EnqueueResult, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m := msg("orders", "")
				m.Args = fmt.Appendf(nil, `{"worker":%d,"i":%d}`, w, i)
				r, err := s.Producer().Enqueue(context.Background(), m)
				if err != nil {
					errs <- err
					return
				}
				results[w] = append(results[w], r)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Enqueue: %v", err)
	}

	want := map[string]drover.Position{}
	for w := range workers {
		var last drover.Position
		for _, r := range results[w] {
			if r.Duplicate || r.Position <= last {
				t.Fatalf("worker %d: result %+v after position %d: want a fresh, increasing position", w, r, last)
			}
			last = r.Position
			want[r.ID] = r.Position
		}
	}
	if len(want) != workers*each {
		t.Fatalf("want %d distinct ids, have %d", workers*each, len(want))
	}

	got := readAll(t, s, "orders", 0, 700)
	if len(got) != workers*each {
		t.Fatalf("read back %d messages, want %d", len(got), workers*each)
	}
	var last drover.Position
	for _, e := range got {
		if e.Position <= last {
			t.Fatalf("entry %s at %d follows %d: positions must strictly increase", e.ID, e.Position, last)
		}
		last = e.Position
		if p, ok := want[e.ID]; !ok || p != e.Position {
			t.Fatalf("entry %s at %d: Enqueue returned position %d (known %v)", e.ID, e.Position, p, ok)
		}
		delete(want, e.ID)
		m := mustDecode(t, e)
		if m.Queue != "orders" || m.Task != "t" || m.Attempt != 0 || m.EnqueuedAt.IsZero() {
			t.Fatalf("decoded %+v: want queue orders, task t, attempt 0, enqueued_at set", m)
		}
	}
	if len(want) != 0 {
		t.Fatalf("%d messages never read back", len(want))
	}
}

// EnqueueBatch: many messages of two queues in one call, crossing the
// per-script chunk size; a repeated caller-chosen id in the batch is a
// duplicate; per queue, positions follow slice order.
// EnqueueBatchAt: a zero time and a time before 1970 go to the log at
// once, a later time to the delayed set; the due times must match the
// messages one for one.
func testEnqueueBatchAt(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	msgs := []*drover.Message{msg("at", ""), msg("at", ""), msg("at", "")}
	if _, err := s.Producer().EnqueueBatchAt(ctx, msgs, make([]time.Time, 2)); err == nil || !strings.Contains(err.Error(), "2 due times for 3 messages") {
		t.Fatalf("EnqueueBatchAt with 2 times for 3 messages: want an error saying so, have %v", err)
	}
	at := []time.Time{{}, time.Unix(-100, 0), time.Now().Add(time.Hour)}
	res, err := s.Producer().EnqueueBatchAt(ctx, msgs, at)
	if err != nil {
		t.Fatalf("EnqueueBatchAt: %v", err)
	}
	if res[0].Position <= 0 || res[1].Position <= res[0].Position || res[2].Position != 0 || res[2].Duplicate {
		t.Fatalf("want two increasing positions then a delayed message (position 0), have %+v", res)
	}
	b, err := s.Log().Backlog(ctx, "at", 0)
	if err != nil || b.Lag != 2 || b.Delayed != 1 {
		t.Fatalf("Backlog: want lag 2 and 1 delayed, have %+v, %v", b, err)
	}
}

func testEnqueueBatch(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	var msgs []*drover.Message
	for i := range 2500 {
		q := "batch-a"
		if i%3 == 0 {
			q = "batch-b"
		}
		msgs = append(msgs, msg(q, ""))
	}
	msgs = append(msgs, msg("batch-a", "unique-1"), msg("batch-a", "unique-1"))
	res, err := s.Producer().EnqueueBatch(ctx, msgs)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	if len(res) != len(msgs) {
		t.Fatalf("want %d results, have %d", len(msgs), len(res))
	}
	last := map[string]drover.Position{}
	for i, r := range res[:len(res)-1] {
		q := msgs[i].Queue
		if r.Duplicate || r.Position <= last[q] {
			t.Fatalf("message %d of %s: result %+v after %d: want a fresh, increasing position", i, q, r, last[q])
		}
		last[q] = r.Position
	}
	if r := res[len(res)-1]; !r.Duplicate || r.ID != "unique-1" {
		t.Fatalf("second unique-1 in the batch: want a duplicate with id unique-1, have %+v", r)
	}
	for q, want := range map[string]int{"batch-a": 1666 + 1, "batch-b": 834} {
		if n := len(readAll(t, s, q, 0, 1000)); n != want {
			t.Fatalf("queue %s: want %d messages, have %d", q, want, n)
		}
	}
	qs, err := s.Inspector().Queues(ctx)
	if err != nil {
		t.Fatalf("Queues: %v", err)
	}
	if fmt.Sprint(qs) != "[batch-a batch-b]" {
		t.Fatalf("Queues: want [batch-a batch-b], have %v", qs)
	}
}

// A caller-chosen id is enqueued once: again while pending, and again after
// it was read and trimmed (the dedupe window remembers it).
func testIdempotentEnqueue(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	first := mustEnqueue(t, s, msg("unique", "job-42"))
	if first.Duplicate || first.ID != "job-42" || first.Position == 0 {
		t.Fatalf("first enqueue: want a fresh job-42 with a position, have %+v", first)
	}
	second := mustEnqueue(t, s, msg("unique", "job-42"))
	if !second.Duplicate || second.ID != "job-42" {
		t.Fatalf("second enqueue while pending: want a duplicate job-42, have %+v", second)
	}
	es := readAll(t, s, "unique", 0, 10)
	if len(es) != 1 || es[0].ID != "job-42" || es[0].Position != first.Position {
		t.Fatalf("want job-42 once at %d, have %+v", first.Position, es)
	}
	if n, err := s.Log().Trim(ctx, "unique", es[0].Position, 0); err != nil || n != 1 {
		t.Fatalf("Trim: want 1 removed, have %d, %v", n, err)
	}
	third := mustEnqueue(t, s, msg("unique", "job-42"))
	if !third.Duplicate {
		t.Fatalf("enqueue after read and trim: want a duplicate (dedupe window), have %+v", third)
	}
	if es := readAll(t, s, "unique", 0, 10); len(es) != 0 {
		t.Fatalf("after trim and a duplicate enqueue: want an empty log, have %+v", es)
	}
	// A generated id is not remembered: the seen set holds only job-42.
	mustEnqueue(t, s, msg("unique", ""))
	qk := s.keys.queue("unique")
	if ids, err := rdb.ZRange(ctx, qk.seen, 0, -1).Result(); err != nil || fmt.Sprint(ids) != "[job-42]" {
		t.Fatalf("seen set: want [job-42], have %v, %v", ids, err)
	}
}

// After the dedupe window, an id may be enqueued again; expired ids are
// purged. The window's end is written into the seen set directly (no
// sleeping).
func testDedupeWindowExpiry(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, func(c *Config) { c.DedupeWindow = time.Hour })
	r := mustEnqueue(t, s, msg("window", "once"))
	qk := s.keys.queue("window")
	end, err := rdb.ZScore(ctx, qk.seen, "once").Result()
	if err != nil {
		t.Fatalf("ZSCORE seen once: %v", err)
	}
	if lo, hi := float64(time.Now().Add(50*time.Minute).UnixMilli()), float64(time.Now().Add(70*time.Minute).UnixMilli()); end < lo || end > hi {
		t.Fatalf("dedupe window end %v: want about an hour from now (%v..%v)", end, lo, hi)
	}
	if _, err := s.Log().Trim(ctx, "window", r.Position, 0); err != nil {
		t.Fatalf("Trim: %v", err)
	}
	// Expire the window, and add an expired id that nobody enqueues again.
	past := float64(time.Now().Add(-time.Minute).UnixMilli())
	rdb.ZAdd(ctx, qk.seen, redis.Z{Score: past, Member: "once"}, redis.Z{Score: past, Member: "stale"})
	again := mustEnqueue(t, s, msg("window", "once"))
	if again.Duplicate || again.Position <= r.Position {
		t.Fatalf("enqueue after the window: want a fresh message after %d, have %+v", r.Position, again)
	}
	if _, err := rdb.ZScore(ctx, qk.seen, "stale").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("expired id stale: want it purged, ZSCORE gives %v", err)
	}
}

// Invalid messages are refused before anything is written.
func testEnqueueRejectsInvalid(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	cases := map[string]*drover.Message{
		"bad queue":    {Queue: "a:b", Task: "t"},
		"no queue":     {Task: "t"},
		"no task":      {Queue: "q"},
		"negative":     {Queue: "q", Task: "t", Attempt: -1},
		"long id":      {Queue: "q", Task: "t", ID: string(make([]byte, MaxIDLen+1))},
		"nil":          nil,
		"bad in batch": {Queue: "q"},
	}
	for name, m := range cases {
		if r, err := s.Producer().Enqueue(ctx, m); err == nil {
			t.Errorf("%s: Enqueue(%+v) = %+v, want an error", name, m, r)
		}
	}
	if _, err := s.Producer().EnqueueBatch(ctx, []*drover.Message{msg("q", ""), {Queue: "q"}}); err == nil {
		t.Errorf("EnqueueBatch with a message without a task: want an error")
	}
	if _, err := s.Producer().Enqueue(ctx, &drover.Message{Queue: "a/b", Task: "t"}); !errors.Is(err, drover.ErrInvalidQueueName) {
		t.Errorf("queue a/b: want ErrInvalidQueueName, have %v", err)
	}
	if qs, err := s.Inspector().Queues(ctx); err != nil || len(qs) != 0 {
		t.Errorf("after refused enqueues: want no queues, have %v, %v", qs, err)
	}
}

// Enqueue publishes a wake-up on the channel of the queue's owner only: a
// queue routed to m1 wakes m1 and never m2; a queue routed nowhere wakes
// nobody; a delayed message carries its due time.
func testWakeups(t *testing.T, rdb redis.UniversalClient) {
	ctx, cancel := context.WithCancel(context.Background())
	s := newTestStore(t, rdb, nil)
	wake, err := s.Listener().Wakeups(ctx, "m1")
	if err != nil {
		t.Fatalf("Wakeups m1: %v", err)
	}
	wake2, err := s.Listener().Wakeups(ctx, "m2")
	if err != nil {
		t.Fatalf("Wakeups m2: %v", err)
	}
	if err := s.Log().RouteWakeups(ctx, "m1", "sleepy", "later"); err != nil {
		t.Fatalf("route to m1: %v", err)
	}
	if err := s.Log().RouteWakeups(ctx, "m2", "other"); err != nil {
		t.Fatalf("route to m2: %v", err)
	}
	nextWake := func(ch <-chan Wakeup, who string) Wakeup {
		t.Helper()
		select {
		case w := <-ch:
			return w
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no wake-up within 30s of an enqueue", who)
		}
		panic("unreachable")
	}
	all, err := s.Listener().AllWakeups(ctx)
	if err != nil {
		t.Fatalf("AllWakeups: %v", err)
	}
	mustEnqueue(t, s, msg("nobody", "")) // no owner: observers only
	select {
	case q := <-all:
		if q != "nobody" {
			t.Fatalf("observer's first wake-up: want nobody, have %q", q)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("observer: no wake-up within 30s of an enqueue to a queue without an owner")
	}
	mustEnqueue(t, s, msg("sleepy", ""))
	if w := nextWake(wake, "m1"); w.Queue != "sleepy" || !w.Due.IsZero() || w.Missed {
		t.Fatalf("m1's wake-up: want sleepy, have %+v", w)
	}
	// A duplicate writes nothing and wakes nobody; a delayed one does, with
	// its due time.
	mustEnqueue(t, s, msg("sleepy", "k"))
	mustEnqueue(t, s, msg("sleepy", "k"))
	due := time.Now().Add(time.Hour)
	if _, err := s.Producer().EnqueueAt(ctx, msg("later", ""), due); err != nil {
		t.Fatalf("EnqueueAt: %v", err)
	}
	var got []string
	for len(got) < 2 {
		w := nextWake(wake, "m1")
		if w.Queue == "later" && w.Due.UnixMilli() != due.UnixMilli() {
			t.Fatalf("wake-up of a delayed message: want due %v, have %+v", due, w)
		}
		got = append(got, w.Queue)
	}
	slices.Sort(got) // on a Cluster, the two come from different nodes
	if fmt.Sprint(got) != "[later sleepy]" {
		t.Fatalf("wake-ups: want [later sleepy], have %v", got)
	}
	// m2 received none of the above: its first wake-up is its own queue's.
	mustEnqueue(t, s, msg("other", ""))
	if w := nextWake(wake2, "m2"); w.Queue != "other" {
		t.Fatalf("m2's first wake-up: want other (m2 owns no other queue), have %+v", w)
	}
	// The queue moves to m2: its wake-ups follow.
	if err := s.Log().RouteWakeups(ctx, "m2", "sleepy"); err != nil {
		t.Fatalf("route sleepy to m2: %v", err)
	}
	mustEnqueue(t, s, msg("sleepy", ""))
	if w := nextWake(wake2, "m2"); w.Queue != "sleepy" {
		t.Fatalf("m2's wake-up after the move: want sleepy, have %+v", w)
	}
	cancel()
	for range wake { // closed once the subscription goroutine exits
	}
	for range wake2 {
	}
	for range all {
	}
}

var _ = addContractCases(contractCase{"EnqueueScriptChecksArguments", testEnqueueScriptChecksArguments})

// The documented enqueue script refuses malformed calls (other languages
// call it by hand) before writing anything.
func testEnqueueScriptChecksArguments(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	qk := s.keys.queue("checked")
	keys := []string{qk.log, qk.msg, qk.seq, qk.delayed, qk.seen, qk.owner}
	for name, args := range map[string][]any{
		"no window":       {"", "", "checked", "a", `{"id":"a","task":"t"}`, 0, 0},
		"due not number":  {86400000, "", "checked", "a", `{"id":"a","task":"t"}`, "soon", 1},
		"empty id":        {86400000, "", "checked", "", `{"id":"","task":"t"}`, 0, 0},
		"missing value":   {86400000, "", "checked", "a", `{"id":"a","task":"t"}`, 0},
		"second is wrong": {86400000, "", "checked", "a", `{"id":"a","task":"t"}`, 0, 1, "b", `{}`, "x", 1},
	} {
		if err := rdb.Eval(ctx, enqueueSource, keys, args...).Err(); err == nil || !strings.Contains(err.Error(), "drover enqueue") {
			t.Errorf("%s: want a drover enqueue error, have %v", name, err)
		}
	}
	if n, err := rdb.Exists(ctx, keys...).Result(); err != nil || n != 0 {
		t.Fatalf("after refused calls: want no keys written, have %d, %v", n, err)
	}
}

var _ = addContractCases(contractCase{"EnqueueScriptShortcutMatchesGeneralPath", testEnqueueScriptShortcut})

// The enqueue script's shortcut for the common call (one message, generated
// id, due now) and the one-message script a lone Producer.Enqueue sends
// (enqueueOneSource) have the general path's effects: the same replies, log
// entries, envelopes, :seq and wake-ups. Due "0" takes the shortcut; "00"
// is the same number but takes the general path; "one" is enqueueOneSource.
func testEnqueueScriptShortcut(t *testing.T, rdb redis.UniversalClient) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newTestStore(t, rdb, nil)
	for _, due := range []string{"0", "00", "one"} {
		q, member := "short-"+due, "m-"+due
		qk := s.keys.queue(q)
		keys := []string{qk.log, qk.msg, qk.seq, qk.delayed, qk.seen, qk.owner}
		if err := s.Log().RouteWakeups(ctx, member, q); err != nil {
			t.Fatalf("RouteWakeups: %v", err)
		}
		wake, err := s.Listener().Wakeups(ctx, member)
		if err != nil {
			t.Fatalf("Wakeups: %v", err)
		}
		enqueue := func(id string) int64 {
			t.Helper()
			if due == "one" {
				now, err := rdb.Time(ctx).Result() // the producer's estimate, as exact as it gets
				if err != nil {
					t.Fatalf("TIME: %v", err)
				}
				res, err := rdb.Eval(ctx, enqueueOneSource, qk.enqueueOne, s.keys.unownedChannel(), q, id, `{"id":"`+id+`"}`, now.UnixMicro()).Int64()
				if err != nil {
					t.Fatalf("one: enqueue %s: %v", id, err)
				}
				return res
			}
			res, err := rdb.Eval(ctx, enqueueSource, keys, 86400000, s.keys.unownedChannel(), q, id, `{"id":"`+id+`"}`, due, "0").Int64Slice()
			if err != nil || len(res) != 1 {
				t.Fatalf("due %q: enqueue %s: want one result, have %v, %v", due, id, res, err)
			}
			return res[0]
		}
		a, b, again := enqueue("a"), enqueue("b"), enqueue("a")
		if a <= 0 || b <= a || again != -1 {
			t.Fatalf("due %q: want positions 0 < a < b and -1 for a again, have %d, %d, %d", due, a, b, again)
		}
		log, err := rdb.ZRangeWithScores(ctx, qk.log, 0, -1).Result()
		if err != nil || len(log) != 2 || log[0].Member != "a" || int64(log[0].Score) != a || log[1].Member != "b" || int64(log[1].Score) != b {
			t.Fatalf("due %q: want log [a:%d b:%d], have %v, %v", due, a, b, log, err)
		}
		if seq, err := rdb.Get(ctx, qk.seq).Int64(); err != nil || seq != b {
			t.Fatalf("due %q: want :seq %d, have %d, %v", due, b, seq, err)
		}
		if env, err := rdb.HGet(ctx, qk.msg, "a").Result(); err != nil || env != `{"id":"a"}` {
			t.Fatalf("due %q: want a's envelope kept, have %q, %v", due, env, err)
		}
		for i := range 2 { // one per added message, none for the duplicate
			select {
			case w := <-wake:
				if w.Queue != q || !w.Due.IsZero() {
					t.Fatalf("due %q: wake-up %d: want %s, have %+v", due, i, q, w)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("due %q: wake-up %d: none within 30s", due, i)
			}
		}
	}
}

// scriptCalls records which enqueue script each EVAL/EVALSHA sent ran.
type scriptCalls struct {
	mu   sync.Mutex
	runs []string // "one" or "general" per script call that ran
}

// record notes the enqueue scripts among cmds once they have been sent. A
// call refused with NOSCRIPT did not run (the client sends the source
// next): the server may not know the script yet, and another test of the
// package flushes the server's scripts (TestTrimRecordingAfterScriptFlush),
// so a call may be refused at any time. err is what the hook's next
// returned for a single command (the command's own Err is not set yet).
func (h *scriptCalls) record(err error, cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		e := c.Err()
		if len(cmds) == 1 && err != nil {
			e = err
		}
		if e != nil && strings.HasPrefix(e.Error(), "NOSCRIPT") {
			continue
		}
		args := c.Args()
		if len(args) < 2 {
			continue
		}
		script, _ := args[1].(string)
		switch {
		case script == enqueueOneScript.Hash() || script == enqueueOneSource:
			h.runs = append(h.runs, "one")
		case script == enqueueScript.Hash() || script == enqueueSource:
			h.runs = append(h.runs, "general")
		case script == enqueueSpreadScript.Hash() || script == enqueueSpreadSource:
			h.runs = append(h.runs, "spread")
		}
	}
}

func (h *scriptCalls) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.runs
	h.runs = nil
	return r
}

func (h *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.record(err, cmd)
		return err
	}
}
func (h *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.record(nil, cmds...)
		return err
	}
}

// A lone Enqueue of a generated id due now, to a queue the Store has
// registered, sends the one-message script; its position still follows
// :seq when Redis's clock is behind it. The first to a queue goes as a
// batch of one (enqueue-spread, beside the registry's SADD), and the calls
// that need more (a caller-chosen id, a due time) go the general way.
func TestLoneEnqueueSendsTheOneMessageScript(t *testing.T) {
	ctx := context.Background()
	rdb, err := NewClient(ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer rdb.Close()
	calls := &scriptCalls{}
	rdb.AddHook(calls)
	s := newTestStore(t, rdb, nil)
	const q = "lone"
	enqueue := func(m *drover.Message, in time.Duration) EnqueueResult {
		t.Helper()
		var res EnqueueResult
		var err error
		if in > 0 {
			res, err = s.Producer().EnqueueIn(ctx, m, in)
		} else {
			res, err = s.Producer().Enqueue(ctx, m)
		}
		if err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		return res
	}
	want := func(what string, runs ...string) {
		t.Helper()
		if have := calls.take(); !slices.Equal(have, runs) {
			t.Fatalf("%s: want script calls %v, have %v", what, runs, have)
		}
	}

	first := enqueue(msg(q, ""), 0)
	want("first enqueue to the queue (registers it)", "spread")
	if ok, err := rdb.SIsMember(ctx, s.keys.queues(), q).Result(); err != nil || !ok {
		t.Fatalf("the first enqueue registers the queue in %s: have %v, %v", s.keys.queues(), ok, err)
	}
	second := enqueue(msg(q, ""), 0)
	want("second enqueue", "one")
	if first.Position <= 0 || second.Position <= first.Position {
		t.Fatalf("want positions 0 < first < second, have %d, %d", first.Position, second.Position)
	}

	// Redis's clock behind the queue's :seq (a clock stepped back): the
	// position is still after the last one.
	ahead := int64(second.Position) + 3_600_000_000 // an hour of µs
	if err := rdb.Set(ctx, s.keys.queue(q).seq, ahead, 0).Err(); err != nil {
		t.Fatalf("SET seq: %v", err)
	}
	third := enqueue(msg(q, ""), 0)
	want("enqueue after :seq moved ahead", "one")
	if int64(third.Position) != ahead+1 {
		t.Fatalf("want position %d after :seq %d, have %d", ahead+1, ahead, third.Position)
	}

	keyed := enqueue(msg(q, "chosen"), 0)
	again := enqueue(msg(q, "chosen"), 0)
	want("caller-chosen ids", "general", "general")
	if keyed.Position <= third.Position || !again.Duplicate {
		t.Fatalf("caller-chosen id: want a position after %d, then a duplicate; have %+v, %+v", third.Position, keyed, again)
	}
	if delayed := enqueue(msg(q, ""), time.Hour); delayed.Position != 0 {
		t.Fatalf("delayed enqueue: want position 0, have %d", delayed.Position)
	}
	want("delayed enqueue", "general")

	b, err := s.Log().Backlog(ctx, q, 0)
	if err != nil || b.Lag != 4 {
		t.Fatalf("want 4 messages in the log, have %+v, %v", b, err)
	}
}
