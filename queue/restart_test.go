package queue

import (
	"context"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// With appendonly yes, a Redis restart between enqueue and read loses
// nothing, and the same client reconnects by itself (the script cache is
// gone too: EVALSHA falls back to EVAL).
func TestRestartWithAppendOnlyLosesNothing(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewRedis(t, testenv.RedisOptions{AppendOnly: true})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, nil)

	msgs := make([]*drover.Message, 500)
	for i := range msgs {
		msgs[i] = msg("durable", "")
	}
	res, err := s.Producer().EnqueueBatch(ctx, msgs)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	single := mustEnqueue(t, s, msg("durable", "keyed"))
	if _, err := s.Producer().EnqueueIn(ctx, msg("durable", "delayed"), time.Hour); err != nil {
		t.Fatalf("EnqueueIn: %v", err)
	}

	srv.Stop(t)
	srv.Start(t)

	es := readAll(t, s, "durable", 0, 100)
	if len(es) != len(msgs)+1 {
		t.Fatalf("after restart: want %d messages, have %d", len(msgs)+1, len(es))
	}
	for i, r := range res {
		if es[i].ID != r.ID || es[i].Position != r.Position {
			t.Fatalf("entry %d after restart: want %s at %d, have %s at %d", i, r.ID, r.Position, es[i].ID, es[i].Position)
		}
		mustDecode(t, es[i])
	}
	if last := es[len(es)-1]; last.ID != "keyed" || last.Position != single.Position {
		t.Fatalf("last entry after restart: want keyed at %d, have %s at %d", single.Position, last.ID, last.Position)
	}
	// The dedupe window, the delayed set and the position sequence survived.
	if r := mustEnqueue(t, s, msg("durable", "keyed")); !r.Duplicate {
		t.Fatalf("keyed after restart: want a duplicate, have %+v", r)
	}
	if b, err := s.Log().Backlog(ctx, "durable", 0); err != nil || b.Delayed != 1 {
		t.Fatalf("Backlog after restart: want 1 delayed, have %+v, %v", b, err)
	}
	if r := mustEnqueue(t, s, msg("durable", "")); r.Position <= single.Position {
		t.Fatalf("enqueue after restart: position %d must follow %d", r.Position, single.Position)
	}
}
