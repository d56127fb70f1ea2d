package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

var _ = addContractCases(
	contractCase{"StatsAgreesWithBacklog", testStatsAgreesWithBacklog},
	contractCase{"RunNowAndMessage", testRunNowAndMessage},
)

// Stats (pipelined plain commands over many queues, across slots on a
// Cluster) gives every queue the same figures as Backlog (one script).
func testStatsAgreesWithBacklog(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	var names []string
	var offsets []drover.Position
	for i := 0; i < 30; i++ {
		q := fmt.Sprintf("stats-%02d", i)
		names = append(names, q)
		var last drover.Position
		for j := 0; j < i%5; j++ {
			res, err := s.Producer().Enqueue(ctx, msg(q, ""))
			if err != nil {
				t.Fatal(err)
			}
			if j == 0 {
				last = res.Position // the offset: after the first message
			}
		}
		if i%3 == 0 {
			if _, err := s.Producer().EnqueueIn(ctx, msg(q, ""), time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		offsets = append(offsets, last)
	}
	names = append(names, "stats-never")
	offsets = append(offsets, 0)
	stats, err := s.Inspector().Stats(ctx, names, offsets)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range names {
		b, err := s.Log().Backlog(ctx, q, offsets[i])
		if err != nil {
			t.Fatal(err)
		}
		st := stats[i]
		if st.Lag != b.Lag || st.Oldest != b.Oldest || st.Delayed != b.Delayed || st.Dead != b.Dead {
			t.Errorf("%s: want Stats = Backlog %+v, have %+v", q, b, st.Backlog)
		}
		end, err := s.Inspector().LastPosition(ctx, q)
		if err != nil && !errors.Is(err, drover.ErrNotFound) {
			t.Fatal(err)
		}
		if st.LogEnd != end {
			t.Errorf("%s: log end: want %d, have %d", q, end, st.LogEnd)
		}
	}
	if _, err := s.Inspector().Stats(ctx, names, offsets[:1]); err == nil {
		t.Error("Stats with fewer offsets than queues: want an error")
	}
}

// RunNow moves exactly one delayed id into the log; Message finds an id in
// each of its states.
func testRunNowAndMessage(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	q := "runnow"
	first, err := s.Producer().Enqueue(ctx, msg(q, ""))
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := s.Producer().EnqueueIn(ctx, msg(q, ""), time.Hour)
	d2, _ := s.Producer().EnqueueIn(ctx, msg(q, ""), time.Hour)
	if mi, err := s.Inspector().Message(ctx, q, d1.ID); err != nil || mi.State != StateDelayed || mi.Raw == nil {
		t.Fatalf("delayed message: have %+v %v", mi, err)
	}
	pos, err := s.Operator().RunNow(ctx, q, d1.ID)
	if err != nil || pos <= first.Position {
		t.Fatalf("RunNow: want a position after %d, have %d %v", first.Position, pos, err)
	}
	if _, err := s.Operator().RunNow(ctx, q, d1.ID); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("RunNow twice: want ErrNotFound, have %v", err)
	}
	mi, err := s.Inspector().Message(ctx, q, d1.ID)
	if err != nil || mi.State != StatePending || mi.Position != pos {
		t.Fatalf("after RunNow: want pending at %d, have %+v %v", pos, mi, err)
	}
	entries, err := s.Log().ReadAfter(ctx, q, first.Position, 10)
	if err != nil || len(entries) != 1 || entries[0].ID != d1.ID || entries[0].Raw == nil {
		t.Fatalf("the log after RunNow: want only %s with its envelope, have %+v %v", d1.ID, entries, err)
	}
	delayed, err := s.Inspector().Delayed(ctx, q, 0, 10)
	if err != nil || len(delayed) != 1 || delayed[0].ID != d2.ID {
		t.Fatalf("delayed after RunNow: want only %s, have %+v %v", d2.ID, delayed, err)
	}
	if err := s.Dead().Kill(ctx, q, first.ID, entries[0].Raw, drover.Failure{Reason: "x", ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	if mi, err := s.Inspector().Message(ctx, q, first.ID); err != nil || mi.State != StateDead || mi.DeadLetter == nil {
		t.Fatalf("dead message: have %+v %v", mi, err)
	}
	if _, err := s.Inspector().Message(ctx, q, "nope"); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("unknown id: want ErrNotFound, have %v", err)
	}
	if err := s.Operator().AppendAudit(ctx, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if recs, err := s.Operator().Audit(ctx, 0, 10); err != nil || len(recs) != 1 || string(recs[0]) != `{"a":1}` {
		t.Fatalf("audit: have %q %v", recs, err)
	}
}
