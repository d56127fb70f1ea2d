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
			// The starts are beside the envelopes in :msg; the old
			// layout's :attempts is not written (issue 43).
			if n, err := rdb.Exists(ctx, s.keys.queue("q").attempts).Result(); err != nil || n != 0 {
				t.Fatalf("want no :attempts key (the starts live in :msg), have %d (err %v)", n, err)
			}
			tc.leave(t, s, "q", ids[0], pos[0])
			key := s.keys.queue("q").msg
			if ok, err := rdb.HExists(ctx, key, startsField(ids[0])).Result(); err != nil || ok {
				t.Fatalf("%s: want the field of %s gone, have it (err %v)", tc.name, ids[0], err)
			}
			if v, err := rdb.HGet(ctx, key, startsField(ids[1])).Int(); err != nil || v != 1 {
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

// A fleet upgraded in place: starts the old layout recorded in :attempts
// still count. The first read that asks for starts moves them beside the
// envelopes (a pending message's and a delayed retry's, added to a start
// recorded since under the new layout), drops those of messages no longer
// in :msg, and deletes :attempts; a read that does not ask leaves it.
func TestStartsOfTheOldLayoutStillCount(t *testing.T) {
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	ctx := context.Background()
	for _, read := range []struct {
		name string
		run  func(t *testing.T, s *Store, starts bool) []Entry
	}{
		{"read-many", func(t *testing.T, s *Store, starts bool) []Entry {
			res := s.Log().ReadMany(ctx, []drover.ReadRequest{{Queue: "q", N: 10, Starts: starts}})
			if res[0].Err != nil {
				t.Fatal(res[0].Err)
			}
			return res[0].Entries
		}},
		{"read-after", func(t *testing.T, s *Store, starts bool) []Entry {
			if !starts {
				return nil // it always reads the starts
			}
			es, err := s.Log().ReadAfter(ctx, "q", 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			return es
		}},
	} {
		t.Run(read.name, func(t *testing.T) {
			s := newTestStore(t, rdb, nil)
			qk := s.keys.queue("q")
			pending := mustEnqueue(t, s, msg("q", "pending"))
			mustEnqueue(t, s, msg("q", "retry"))
			retry := msg("q", "retry")
			retry.Attempt = 1
			if err := s.Log().Retry(ctx, retry, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			// As a worker of the old layout left them: the retry's start
			// recorded since by a worker of the new one counts as well.
			if err := rdb.HSet(ctx, qk.attempts, "pending", 2, "retry", 1, "gone", 5).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Log().RecordStarts(ctx, []string{"q"}, []string{"retry"}); err != nil {
				t.Fatal(err)
			}
			read.run(t, s, false)
			if n, _ := rdb.Exists(ctx, qk.attempts).Result(); read.name == "read-many" && n != 1 {
				t.Fatalf("a read without starts: want :attempts left, have %d keys", n)
			}
			es := read.run(t, s, true)
			if len(es) != 1 || es[0].ID != "pending" || es[0].Position != pending.Position || es[0].Starts != 2 {
				t.Fatalf("want the pending message with its 2 starts of the old layout, have %+v", es)
			}
			if n, err := rdb.Exists(ctx, qk.attempts).Result(); err != nil || n != 0 {
				t.Fatalf("want :attempts gone after the move, have %d (err %v)", n, err)
			}
			if ok, _ := rdb.HExists(ctx, qk.msg, startsField("gone")).Result(); ok {
				t.Fatal("want no starts field for a message :msg does not hold")
			}
			n, err := s.Log().RecordStarts(ctx, []string{"q", "q"}, []string{"pending", "retry"})
			if err != nil {
				t.Fatal(err)
			}
			if n[0] != 3 || n[1] != 3 {
				t.Fatalf("next starts: want [3 3] (2 + 1; 1 old + 1 new + 1), have %v", n)
			}
		})
	}
}

// A lone start record (what a runner sends at low concurrency) is one
// HINCRBY of the message's starts field, on a standalone server and
// routed by its key on a Cluster (as the batch's pipeline is), and costs
// the client no pipeline: at most maxLoneRecordAllocs allocations (16
// through a pipeline of one).
func TestALoneStartRecordIsOneCommand(t *testing.T) {
	for _, be := range testBackends {
		t.Run(be.name, func(t *testing.T) {
			rdb := be.client(t)
			s := newTestStore(t, rdb, nil)
			ctx := context.Background()
			r, err := s.Producer().Enqueue(ctx, msg("q", ""))
			if err != nil {
				t.Fatal(err)
			}
			for want := 1; want <= 2; want++ {
				n, err := s.Log().RecordStarts(ctx, []string{"q"}, []string{r.ID})
				if err != nil || len(n) != 1 || n[0] != want {
					t.Fatalf("start %d: want [%d], have %v (err %v)", want, want, n, err)
				}
			}
			if v, err := rdb.HGet(ctx, s.keys.queue("q").msg, startsField(r.ID)).Int(); err != nil || v != 2 {
				t.Fatalf("want the starts field at 2, have %d (err %v)", v, err)
			}
			// A batch (the pipeline) counts on from there.
			if n, err := s.Log().RecordStarts(ctx, []string{"q", "q"}, []string{r.ID, r.ID}); err != nil || len(n) != 2 || n[0] != 3 || n[1] != 4 {
				t.Fatalf("a batch of two: want [3 4], have %v (err %v)", n, err)
			}
			if _, err := s.Log().RecordStarts(ctx, []string{"q"}, []string{""}); err == nil {
				t.Fatal("an empty id: want an error, have none")
			}
			if be.name != "standalone" {
				return // the allocations are the client's, the same on both
			}
			allocs := testing.AllocsPerRun(200, func() {
				_, err = s.Log().RecordStarts(ctx, []string{"q"}, []string{r.ID})
			})
			if err != nil {
				t.Fatal(err)
			}
			if allocs > maxLoneRecordAllocs {
				t.Fatalf("a lone start record: want at most %d allocations, have %.1f", maxLoneRecordAllocs, allocs)
			}
		})
	}
}

// maxLoneRecordAllocs is TestALoneStartRecordIsOneCommand's bound: the
// field's name, its box, the argument list, the command and the reply's
// slice, and go-redis's three for the pooled connection's liveness check.
const maxLoneRecordAllocs = 8
