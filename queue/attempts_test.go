package queue

import (
	"context"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// A message's recorded starts go where the message goes: every way a
// message leaves a queue deletes its :attempts field (checked in Redis),
// and only its own; a start is counted per message, whoever records it.
func TestAttemptsFieldLeavesWithTheMessage(t *testing.T) {
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		leave func(t *testing.T, s *Store, q, id string, pos drover.Position)
	}{
		{"trim", func(t *testing.T, s *Store, q, _ string, pos drover.Position) {
			if _, err := s.Log().Trim(ctx, q, pos, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"trim-recording", func(t *testing.T, s *Store, q, id string, pos drover.Position) {
			rec := []drover.Outcome{{ID: id, State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()}}
			if _, err := s.Log().TrimRecording(ctx, q, pos, 0, rec, drover.Outcomes{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"trim-many", func(t *testing.T, s *Store, q, _ string, pos drover.Position) {
			for _, err := range s.Log().TrimMany(ctx, []drover.TrimRequest{{Queue: q, Offset: pos}}) {
				if err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"dead letter", func(t *testing.T, s *Store, q, id string, _ drover.Position) {
			if err := s.Log().DeadLetter(ctx, q, drover.DeadLetter{ID: id, Message: &drover.Message{ID: id, Queue: q, Task: "t"}}); err != nil {
				t.Fatal(err)
			}
		}},
		{"park-head", func(t *testing.T, s *Store, q, id string, _ drover.Position) {
			if err := s.Log().ParkHead(ctx, q, id, nil, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t, rdb, nil)
			var ids []string
			var pos []drover.Position
			for range 2 {
				r, err := s.Producer().Enqueue(ctx, msg("q", ""))
				if err != nil {
					t.Fatal(err)
				}
				ids, pos = append(ids, r.ID), append(pos, r.Position)
			}
			n, err := s.Log().RecordStarts(ctx, []string{"q", "q", "q"}, []string{ids[0], ids[1], ids[0]})
			if err != nil {
				t.Fatal(err)
			}
			if n[0] != 1 || n[1] != 1 || n[2] != 2 {
				t.Fatalf("starts: want [1 1 2], have %v", n)
			}
			tc.leave(t, s, "q", ids[0], pos[0])
			key := s.keys.queue("q").attempts
			if ok, err := rdb.HExists(ctx, key, ids[0]).Result(); err != nil || ok {
				t.Fatalf("%s: want the field of %s gone, have it (err %v)", tc.name, ids[0], err)
			}
			if v, err := rdb.HGet(ctx, key, ids[1]).Int(); err != nil || v != 1 {
				t.Fatalf("%s: want the other message's field kept at 1, have %d (err %v)", tc.name, v, err)
			}
		})
	}
}

// The parked envelope replaces the stored one only while that is the one
// the worker read: an operator's edit made meanwhile is kept.
func TestParkHeadKeepsAnEditedEnvelope(t *testing.T) {
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	r, err := s.Producer().Enqueue(ctx, msg("q", "head"))
	if err != nil {
		t.Fatal(err)
	}
	key := s.keys.queue("q").msg
	read, err := rdb.HGet(ctx, key, "head").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Log().ParkHead(ctx, "q", r.ID, read, []byte(`{"parked":1}`)); err != nil {
		t.Fatal(err)
	}
	if have, _ := rdb.HGet(ctx, key, "head").Result(); have != `{"parked":1}` {
		t.Fatalf("envelope: want the parked one, have %s", have)
	}
	if err := s.Log().ParkHead(ctx, "q", r.ID, read, []byte(`{"parked":2}`)); err != nil {
		t.Fatal(err)
	}
	if have, _ := rdb.HGet(ctx, key, "head").Result(); have != `{"parked":1}` {
		t.Fatalf("envelope changed since it was read: want it kept, have %s", have)
	}
}
