package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(
	contractCase{"ReadResumesAfterOffset", testReadResumesAfterOffset},
	contractCase{"PoisonEntries", testPoisonEntries},
)

// Reading in batches from an offset resumes exactly after it: every message
// once, in enqueue order, whatever the batch size.
func testReadResumesAfterOffset(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	var ids []string
	for i := range 25 {
		r := mustEnqueue(t, s, msg("resume", fmt.Sprintf("m%02d", i)))
		ids = append(ids, r.ID)
	}
	if es, err := s.Log().ReadAfter(ctx, "resume", 0, 0); err != nil || len(es) != 0 {
		t.Fatalf("ReadAfter with n=0: want nothing, have %d entries, %v", len(es), err)
	}
	for _, batch := range []int{1, 7, 10, 25, 100} {
		var offset drover.Position
		var got []string
		for {
			es, err := s.Log().ReadAfter(ctx, "resume", offset, batch)
			if err != nil {
				t.Fatalf("ReadAfter(%d, %d): %v", offset, batch, err)
			}
			if len(es) > batch {
				t.Fatalf("ReadAfter(%d, %d): want at most %d entries, have %d", offset, batch, batch, len(es))
			}
			if len(es) == 0 {
				break
			}
			for _, e := range es {
				if e.Position <= offset {
					t.Fatalf("batch %d: entry at %d is not after offset %d", batch, e.Position, offset)
				}
				got = append(got, e.ID)
			}
			offset = es[len(es)-1].Position
		}
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			t.Fatalf("batch %d: want %v, have %v", batch, ids, got)
		}
	}
	// Resuming from the 10th message's position gives the 11th onward.
	all := readAll(t, s, "resume", 0, 100)
	es, err := s.Log().ReadAfter(ctx, "resume", all[9].Position, 3)
	if err != nil {
		t.Fatalf("ReadAfter: %v", err)
	}
	if len(es) != 3 || es[0].ID != "m10" || es[2].ID != "m12" {
		t.Fatalf("after m09: want m10..m12, have %+v", es)
	}
	if m := mustDecode(t, es[0]); m.Position != es[0].Position || m.ID != "m10" || string(m.Args) != `{"n":1}` {
		t.Fatalf("decoded m10: want position %d and args {\"n\":1}, have %+v", es[0].Position, m)
	}
	// An offset beyond the end reads nothing.
	if es, err := s.Log().ReadAfter(ctx, "resume", all[24].Position, 10); err != nil || len(es) != 0 {
		t.Fatalf("after the last message: want nothing, have %+v, %v", es, err)
	}
}

// Malformed envelopes written by hand and ids without an envelope come back
// as poison, in place; the messages after them are still readable.
func testPoisonEntries(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	first := mustEnqueue(t, s, msg("poison", "good-1"))
	qk := s.keys.queue("poison")
	hand := []struct{ id, env string }{
		{"broken", `{"id":"broken","task":`},
		{"not-object", `[1,2,3]`},
		{"no-task", `{"id":"no-task","queue":"poison"}`},
		{"wrong-id", `{"id":"other","queue":"poison","task":"t"}`},
		{"ghost", ""}, // in the log, no envelope
	}
	for i, h := range hand {
		pos := float64(first.Position) + float64(i+1)
		if err := rdb.ZAdd(ctx, qk.log, redis.Z{Score: pos, Member: h.id}).Err(); err != nil {
			t.Fatalf("ZADD %s: %v", h.id, err)
		}
		if h.env != "" {
			if err := rdb.HSet(ctx, qk.msg, h.id, h.env).Err(); err != nil {
				t.Fatalf("HSET %s: %v", h.id, err)
			}
		}
	}
	// Make the next position follow the hand-written ones.
	rdb.Set(ctx, qk.seq, int64(first.Position)+int64(len(hand))+1000, 0)
	last := mustEnqueue(t, s, msg("poison", "good-2"))

	es := readAll(t, s, "poison", 0, 3)
	if len(es) != len(hand)+2 {
		t.Fatalf("want %d entries, have %d: %+v", len(hand)+2, len(es), es)
	}
	if m := mustDecode(t, es[0]); m.ID != "good-1" {
		t.Fatalf("first entry: want good-1, have %s", m.ID)
	}
	for i, h := range hand {
		e := es[i+1]
		if e.ID != h.id {
			t.Fatalf("entry %d: want %s, have %s", i+1, h.id, e.ID)
		}
		m, err := e.Decode()
		var pe *PoisonError
		if m != nil || !errors.Is(err, drover.ErrPoison) || !errors.As(err, &pe) {
			t.Fatalf("%s: want a *PoisonError matching ErrPoison, have %v, %v", h.id, m, err)
		}
		if pe.ID != h.id || pe.Queue != "poison" || pe.Position != e.Position || pe.Reason == "" {
			t.Fatalf("%s: poison error %+v does not name the entry", h.id, pe)
		}
		if (h.env == "") != (e.Raw == nil) {
			t.Fatalf("%s: want Raw nil only without an envelope, have %q", h.id, e.Raw)
		}
	}
	if m := mustDecode(t, es[len(es)-1]); m.ID != "good-2" || m.Position != last.Position {
		t.Fatalf("last entry: want good-2 at %d, have %+v", last.Position, m)
	}
}
