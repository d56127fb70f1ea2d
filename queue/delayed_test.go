package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(
	contractCase{"DelayedPromoteRevoke", testDelayedPromoteRevoke},
	contractCase{"RetryAcrossTrim", testRetryAcrossTrim},
	contractCase{"PromoteManyAnswersEachQueue", testPromoteManyAnswersEachQueue},
)

// PromoteMany does, for each request, what a promotion of its queue does
// alone: the due messages of each queue move, each answer says how many
// and when the next one is due, and a bad request fails alone.
func testPromoteManyAnswersEachQueue(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	now := time.Now()
	for _, d := range []struct {
		queue, id string
		in        time.Duration
	}{{"pm-a", "a1", time.Minute}, {"pm-a", "a2", 2 * time.Minute}, {"pm-a", "a3", time.Hour}, {"pm-b", "b1", time.Minute}} {
		if _, err := s.Producer().EnqueueAt(ctx, msg(d.queue, d.id), now.Add(d.in)); err != nil {
			t.Fatal(err)
		}
	}
	at := now.Add(5 * time.Minute)
	res := s.Log().PromoteMany(ctx, []drover.PromoteRequest{
		{Queue: "pm-a", Now: at, Limit: 10},
		{Queue: "", Now: at}, // not a queue name
		{Queue: "pm-b", Now: at, Limit: 10},
		{Queue: "pm-none", Now: at},
		{Queue: "pm-a", Now: at, Limit: 10}, // again: nothing more is due
	})
	if len(res) != 5 {
		t.Fatalf("want 5 results, have %d", len(res))
	}
	if r := res[0]; r.Err != nil || r.Moved != 2 || r.Next.UnixMilli() != now.Add(time.Hour).UnixMilli() {
		t.Errorf("pm-a: want 2 moved, next in an hour, have %+v", r)
	}
	if res[1].Err == nil {
		t.Errorf("an empty queue name: want an error, have %+v", res[1])
	}
	if r := res[2]; r.Err != nil || r.Moved != 1 || !r.Next.IsZero() {
		t.Errorf("pm-b: want 1 moved, none left, have %+v", r)
	}
	if r := res[3]; r.Err != nil || r.Moved != 0 || !r.Next.IsZero() {
		t.Errorf("pm-none: want nothing, have %+v", r)
	}
	if r := res[4]; r.Err != nil || r.Moved != 0 || r.Next.UnixMilli() != now.Add(time.Hour).UnixMilli() {
		t.Errorf("pm-a again: want 0 moved, next in an hour, have %+v", r)
	}
	if es := readAll(t, s, "pm-a", 0, 10); len(es) != 2 || es[0].ID != "a1" || es[1].ID != "a2" {
		t.Errorf("pm-a's log: want a1, a2, have %+v", es)
	}
}

// Delayed messages wait outside the log; PromoteDueNext moves the due ones in
// with fresh positions; Revoke is true only for a message still delayed.
func testDelayedPromoteRevoke(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	now := time.Now()
	before := mustEnqueue(t, s, msg("later", "now-1"))
	for _, id := range []string{"in-1h", "in-2h"} {
		r, err := s.Producer().EnqueueAt(ctx, msg("later", id), now.Add(map[string]time.Duration{"in-1h": time.Hour, "in-2h": 2 * time.Hour}[id]))
		if err != nil || r.Position != 0 || r.Duplicate {
			t.Fatalf("EnqueueAt(%s): want a delayed message (position 0), have %+v, %v", id, r, err)
		}
	}
	if r, err := s.Producer().EnqueueIn(ctx, msg("later", "in-1h"), time.Minute); err != nil || !r.Duplicate {
		t.Fatalf("EnqueueIn of a delayed id: want a duplicate, have %+v, %v", r, err)
	}
	past, err := s.Producer().EnqueueAt(ctx, msg("later", "overdue"), now.Add(-time.Hour))
	if err != nil || past.Position <= before.Position {
		t.Fatalf("EnqueueAt in the past: want it in the log after %d, have %+v, %v", before.Position, past, err)
	}
	if due, ok, err := s.Inspector().NextDue(ctx, "later"); err != nil || !ok || due.UnixMilli() != now.Add(time.Hour).UnixMilli() {
		t.Fatalf("NextDue: want %v, have %v %v %v", now.Add(time.Hour), due, ok, err)
	}
	if es := readAll(t, s, "later", 0, 10); len(es) != 2 {
		t.Fatalf("log before promotion: want now-1 and overdue, have %+v", es)
	}
	if b, err := s.Log().Backlog(ctx, "later", 0); err != nil || b.Delayed != 2 || b.Lag != 2 {
		t.Fatalf("Backlog: want lag 2, delayed 2, have %+v, %v", b, err)
	}

	if n, _, err := promoteDueNext(ctx, s.Log(), "later", now, 10); err != nil || n != 0 {
		t.Fatalf("PromoteDueNext(now): want 0, have %d, %v", n, err)
	}
	if ok, err := s.Operator().Revoke(ctx, "later", "in-1h"); err != nil || !ok {
		t.Fatalf("Revoke(in-1h): want true, have %v, %v", ok, err)
	}
	if ok, err := s.Operator().Revoke(ctx, "later", "in-1h"); err != nil || ok {
		t.Fatalf("Revoke(in-1h) again: want false, have %v, %v", ok, err)
	}
	if ok, err := s.Operator().Revoke(ctx, "later", "never-enqueued"); err != nil || ok {
		t.Fatalf("Revoke(never-enqueued): want false, have %v, %v", ok, err)
	}
	// Nothing of a revoked message is kept: its id can be used again.
	qk := s.keys.queue("later")
	if n, _ := rdb.HExists(ctx, qk.msg, "in-1h").Result(); n {
		t.Fatalf("revoked in-1h still has an envelope")
	}
	if r, err := s.Producer().EnqueueIn(ctx, msg("later", "in-1h"), 3*time.Hour); err != nil || r.Duplicate {
		t.Fatalf("enqueue of a revoked id: want a fresh message, have %+v, %v", r, err)
	}

	n, _, err := promoteDueNext(ctx, s.Log(), "later", now.Add(2*time.Hour+time.Second), 10)
	if err != nil || n != 1 {
		t.Fatalf("PromoteDueNext(now+2h): want 1, have %d, %v", n, err)
	}
	if ok, err := s.Operator().Revoke(ctx, "later", "in-2h"); err != nil || ok {
		t.Fatalf("Revoke(in-2h) after promotion: want false, have %v, %v", ok, err)
	}
	es := readAll(t, s, "later", past.Position, 10)
	if len(es) != 1 || es[0].ID != "in-2h" {
		t.Fatalf("after promotion: want in-2h after overdue, have %+v", es)
	}
	if m := mustDecode(t, es[0]); m.Task != "t" {
		t.Fatalf("promoted in-2h: want task t, have %+v", m)
	}
	// The limit bounds one call; the rest waits for the next.
	for _, id := range []string{"a", "b", "c"} {
		if _, err := s.Producer().EnqueueAt(ctx, msg("later", id), now.Add(time.Minute)); err != nil {
			t.Fatalf("EnqueueAt(%s): %v", id, err)
		}
	}
	if n, _, err := promoteDueNext(ctx, s.Log(), "later", now.Add(time.Hour), 2); err != nil || n != 2 {
		t.Fatalf("PromoteDueNext limit 2: want 2, have %d, %v", n, err)
	}
	if n, _, err := promoteDueNext(ctx, s.Log(), "later", now.Add(time.Hour), 2); err != nil || n != 1 {
		t.Fatalf("PromoteDueNext again: want 1, have %d, %v", n, err)
	}
	if es := readAll(t, s, "later", es[0].Position, 10); len(es) != 3 || es[0].ID != "a" || es[2].ID != "c" {
		t.Fatalf("promoted in due order: want a b c, have %+v", es)
	}
}

// A retry keeps its envelope through a trim of its old position, whether the
// trim comes before or after its promotion, and comes back with its new
// attempt at a higher position.
func testRetryAcrossTrim(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	mustEnqueue(t, s, msg("retry", "x"))
	mustEnqueue(t, s, msg("retry", "y"))
	es := readAll(t, s, "retry", 0, 10)
	if len(es) != 2 {
		t.Fatalf("want x and y, have %+v", es)
	}
	offset := es[1].Position
	now := time.Now()

	// x: retried, trimmed, then promoted.
	x := mustDecode(t, es[0])
	x.Attempt++
	if err := s.Log().Retry(ctx, x, now.Add(time.Minute)); err != nil {
		t.Fatalf("Retry(x): %v", err)
	}
	// y: retried, promoted, then trimmed.
	y := mustDecode(t, es[1])
	y.Attempt++
	if err := s.Log().Retry(ctx, y, now.Add(-time.Second)); err != nil {
		t.Fatalf("Retry(y): %v", err)
	}
	if n, _, err := promoteDueNext(ctx, s.Log(), "retry", now, 10); err != nil || n != 1 {
		t.Fatalf("PromoteDueNext: want y, have %d, %v", n, err)
	}
	if _, err := s.Log().Trim(ctx, "retry", offset, 0); err != nil {
		t.Fatalf("Trim: %v", err)
	}
	qk := s.keys.queue("retry")
	for _, id := range []string{"x", "y"} {
		if ok, err := rdb.HExists(ctx, qk.msg, id).Result(); err != nil || !ok {
			t.Fatalf("after trim: envelope of %s must be kept, HEXISTS = %v, %v", id, ok, err)
		}
	}
	if n, _, err := promoteDueNext(ctx, s.Log(), "retry", now.Add(2*time.Minute), 10); err != nil || n != 1 {
		t.Fatalf("PromoteDueNext: want x, have %d, %v", n, err)
	}
	got := readAll(t, s, "retry", offset, 10)
	if len(got) != 2 || got[0].ID != "y" || got[1].ID != "x" {
		t.Fatalf("after the retries: want y then x after %d, have %+v", offset, got)
	}
	for _, e := range got {
		if m := mustDecode(t, e); m.Attempt != 1 {
			t.Fatalf("retried %s: want attempt 1, have %d", e.ID, m.Attempt)
		}
	}
	if err := s.Log().Retry(ctx, &drover.Message{Queue: "retry", Task: "t"}, now); err == nil {
		t.Fatalf("Retry of a message without id: want an error")
	}
	if _, err := s.Operator().Revoke(ctx, "bad:queue", "x"); !errors.Is(err, drover.ErrInvalidQueueName) {
		t.Fatalf("Revoke in bad:queue: want ErrInvalidQueueName, have %v", err)
	}
}

// promoteDueNext promotes one queue through PromoteMany, as an owner's
// lone promotion does.
func promoteDueNext(ctx context.Context, l Log, q string, now time.Time, limit int) (int, time.Time, error) {
	r := l.PromoteMany(ctx, []drover.PromoteRequest{{Queue: q, Now: now, Limit: limit}})[0]
	return r.Moved, r.Next, r.Err
}
