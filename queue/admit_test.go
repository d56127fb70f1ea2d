package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// The HTTP producer's admission (docs/decisions.md, "Issue 42: one round
// trip per HTTP enqueue" and "Issue 41: a family's bound on its queues").

func TestEnqueueAdmittedKnownAndRegister(t *testing.T) {
	ctx := context.Background()
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	s := newTestStore(t, rdb, nil)
	p := s.Producer()

	// Not listed, zero Admission: refused, nothing written.
	_, err := p.EnqueueAdmitted(ctx, []*drover.Message{msg("adm-new", "k1")}, nil, Admission{})
	if !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("unlisted queue: want ErrNotRegistered, have %v", err)
	}
	if keys := queueKeysIn(t, rdb, s, "adm-new"); len(keys) > 0 {
		t.Fatalf("refused enqueue: want no key written, have %v", keys)
	}
	if ok, _ := s.Inspector().QueueKnown(ctx, "adm-new"); ok {
		t.Fatal("refused enqueue: want the queue unlisted, have it listed")
	}

	// Register: written and listed; then the zero Admission takes it, and
	// the caller's id stays an idempotency key.
	res, err := p.EnqueueAdmitted(ctx, []*drover.Message{msg("adm-new", "k1")}, nil, Admission{Register: true})
	if err != nil || len(res) != 1 || res[0].Position == 0 {
		t.Fatalf("register: want a position, have %+v, %v", res, err)
	}
	if ok, _ := s.Inspector().QueueKnown(ctx, "adm-new"); !ok {
		t.Fatal("register: want the queue listed")
	}
	at := []time.Time{{}, time.Now().Add(time.Hour)}
	res, err = p.EnqueueAdmitted(ctx, []*drover.Message{msg("adm-new", "k1"), msg("adm-new", "k2")}, at, Admission{})
	if err != nil || !res[0].Duplicate || res[1].Duplicate || res[1].Position != 0 {
		t.Fatalf("listed queue: want k1 duplicate and k2 delayed, have %+v, %v", res, err)
	}
	if n, err := rdb.ZCard(ctx, s.keys.queue("adm-new").delayed).Result(); err != nil || n != 1 {
		t.Fatalf("want 1 delayed message, have %d, %v", n, err)
	}
	if n, _ := s.Families().FamilyQueues(ctx, "any"); n != 0 {
		t.Fatalf("no family admission: want no count, have %d", n)
	}
}

// A family's bound: enqueues that would bring a queue beyond it are
// refused and write nothing; a listed queue of a full family still takes
// messages; retiring a queue frees room.
func TestEnqueueAdmittedFamilyBound(t *testing.T) {
	ctx := context.Background()
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	s := newTestStore(t, rdb, nil)
	p := s.Producer()
	adm := Admission{Family: "cust", MaxQueues: 2}
	for _, q := range []string{"cust-1", "cust-2"} {
		if _, err := p.EnqueueAdmitted(ctx, []*drover.Message{msg(q, "")}, nil, adm); err != nil {
			t.Fatalf("%s: want admitted, have %v", q, err)
		}
	}
	if n, err := s.Families().FamilyQueues(ctx, "cust"); err != nil || n != 2 {
		t.Fatalf("want the family's count 2, have %d, %v", n, err)
	}
	_, err := p.EnqueueAdmitted(ctx, []*drover.Message{msg("cust-3", "a"), msg("cust-3", "b")}, nil, adm)
	var full *drover.FamilyFullError
	if !errors.As(err, &full) || !errors.Is(err, drover.ErrFamilyFull) || full.MaxQueues != 2 || full.Family != "cust" || full.Queue != "cust-3" {
		t.Fatalf("third key: want a FamilyFullError naming cust, cust-3 and 2, have %v", err)
	}
	if keys := queueKeysIn(t, rdb, s, "cust-3"); len(keys) > 0 {
		t.Fatalf("refused key: want nothing written, have %v", keys)
	}
	if ok, _ := s.Inspector().QueueKnown(ctx, "cust-3"); ok {
		t.Fatal("refused key: want it unlisted")
	}
	if n, _ := s.Families().FamilyQueues(ctx, "cust"); n != 2 {
		t.Fatalf("after the refusal: want the count 2, have %d", n)
	}
	// A key the family holds takes messages while it is full.
	if _, err := p.EnqueueAdmitted(ctx, []*drover.Message{msg("cust-1", "")}, nil, adm); err != nil {
		t.Fatalf("listed key of a full family: want admitted, have %v", err)
	}

	// cust-2's message ran and was trimmed (its keys but :seq and :family
	// gone): it retires, and its room goes back to the family.
	qk := s.keys.queue("cust-2")
	if err := rdb.Del(ctx, qk.log, qk.msg).Err(); err != nil {
		t.Fatal(err)
	}
	st, err := s.Families().Retire(ctx, "cust-2", time.Now().Add(time.Hour))
	if err != nil || st != QueueIdle {
		t.Fatalf("retire cust-2: want idle, have %v, %v", st, err)
	}
	if keys := queueKeysIn(t, rdb, s, "cust-2"); len(keys) > 0 {
		t.Fatalf("retired: want no key left, have %v", keys)
	}
	if n, _ := s.Families().FamilyQueues(ctx, "cust"); n != 1 {
		t.Fatalf("after the retire: want the count 1, have %d", n)
	}
	if _, err := p.EnqueueAdmitted(ctx, []*drover.Message{msg("cust-3", "a")}, nil, adm); err != nil {
		t.Fatalf("third key after a retire: want admitted, have %v", err)
	}
	if n, _ := s.Families().FamilyQueues(ctx, "cust"); n != 2 {
		t.Fatalf("after the third key: want the count 2, have %d", n)
	}
	if _, err := p.EnqueueAdmitted(ctx, []*drover.Message{msg("cust-2", "")}, nil, adm); !errors.Is(err, drover.ErrFamilyFull) {
		t.Fatalf("the retired key again, family full: want ErrFamilyFull, have %v", err)
	}
}
