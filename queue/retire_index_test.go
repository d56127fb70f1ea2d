package queue

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

var _ = addContractCases(contractCase{"RetireIndex", testRetireIndex})

// The retire index (docs/decisions.md, "Issue 40: the retire sweep visits
// the emptied queues"): a trim that empties a queue's log, and only such a
// trim, notes the queue; the retire script drops a busy queue's entry,
// scores a kept one for when it may retire, and removes a retired one's.
// On a Redis Cluster there is no index (another slot): no candidates.
func testRetireIndex(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	fam := s.Families()
	entries := func() map[string]time.Time {
		t.Helper()
		es, err := fam.RetireCandidates(ctx, time.Now().Add(48*time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		for _, e := range es {
			out[e.Queue] = e.At
		}
		return out
	}
	trimMany := func(q string, off drover.Position, recordsOnly bool) {
		t.Helper()
		for _, err := range s.Log().TrimMany(ctx, []drover.TrimRequest{{Queue: q, Offset: off, RecordsOnly: recordsOnly,
			Outcomes: []drover.Outcome{{ID: "x", State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()}}, Policy: drover.Outcomes{}}}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()

	// idx-many: two messages; a trim to the first leaves the second, so
	// the log is not empty: not noted. A trim to the second empties it.
	r1 := mustEnqueue(t, s, msg("idx-many", ""))
	r2 := mustEnqueue(t, s, msg("idx-many", ""))
	trimMany("idx-many", r1.Position, false)
	if _, ok := entries()["idx-many"]; ok {
		t.Fatal("a trim that left a message: want idx-many not in the retire index, have it there")
	}
	trimMany("idx-many", r2.Position, true) // records only: the log is untouched
	if _, ok := entries()["idx-many"]; ok {
		t.Fatal("a records-only trim: want idx-many not in the retire index, have it there")
	}
	trimMany("idx-many", r2.Position, false)
	// idx-one: the single trim (the owner's release, a long log) notes it too.
	r := mustEnqueue(t, s, msg("idx-one", ""))
	if _, err := s.Log().Trim(ctx, "idx-one", r.Position, 0); err != nil {
		t.Fatal(err)
	}
	// idx-keyed: a caller-chosen id, inside its dedupe window after the trim.
	r = mustEnqueue(t, s, msg("idx-keyed", "k-1"))
	trimMany("idx-keyed", r.Position, false)

	have := entries()
	if _, ok := rdb.(*redis.ClusterClient); ok {
		if len(have) != 0 {
			t.Fatalf("on a Redis Cluster: want no retire index, have %v", have)
		}
		return
	}
	for _, q := range []string{"idx-many", "idx-one", "idx-keyed"} {
		at, ok := have[q]
		if !ok {
			t.Fatalf("a trim emptied %s: want it in the retire index, have %v", q, have)
		}
		if at.Before(start.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
			t.Errorf("%s: want it noted when the trim emptied it (%s..now), have %s", q, start, at)
		}
	}
	if early, err := fam.RetireCandidates(ctx, start.Add(-time.Minute), 100); err != nil || len(early) != 0 {
		t.Fatalf("candidates emptied a minute before the trims: want none, have %v (%v)", early, err)
	}

	// Busy again: the check drops it (the trim that empties it notes it again).
	mustEnqueue(t, s, msg("idx-one", ""))
	if st, err := fam.CheckIdle(ctx, []string{"idx-one"}, time.Now().Add(time.Hour)); err != nil || st[0] != QueueBusy {
		t.Fatalf("want idx-one busy, have %v (%v)", st, err)
	}
	// Kept by its dedupe window (24 h): scored so that retire_after (here
	// about 0: the cutoff is now, after its last enqueue) after the score
	// is the window's end.
	if st, err := fam.CheckIdle(ctx, []string{"idx-keyed"}, time.Now().Add(time.Millisecond)); err != nil || st[0] != QueueKept {
		t.Fatalf("want idx-keyed kept, have %v (%v)", st, err)
	}
	have = entries()
	if _, ok := have["idx-one"]; ok {
		t.Error("idx-one holds a message: want it out of the retire index, have it there")
	}
	if at := have["idx-keyed"]; at.Before(start.Add(23 * time.Hour)) {
		t.Errorf("idx-keyed kept by its dedupe window: want its entry about 24 h ahead, have %s", at)
	}
	// Retired: out of the index.
	if st, err := fam.RetireMany(ctx, []string{"idx-many"}, time.Now().Add(time.Second)); err != nil || st[0] != QueueIdle {
		t.Fatalf("want idx-many retired, have %v (%v)", st, err)
	}
	if _, ok := entries()["idx-many"]; ok {
		t.Error("idx-many retired: want it out of the retire index, have it there")
	}

	// Tidy: a drop, and a postponement that only moves an entry later and
	// never adds one.
	later := start.Add(time.Hour).Truncate(time.Millisecond)
	if err := fam.TidyRetireIndex(ctx, []string{"idx-keyed"}, []EmptiedQueue{{Queue: "idx-gone", At: later}}); err != nil {
		t.Fatal(err)
	}
	if have := entries(); len(have) != 0 {
		t.Fatalf("after dropping idx-keyed and postponing a queue not there: want an empty index, have %v", have)
	}
	mustEnqueue(t, s, msg("idx-later", ""))
	trimMany("idx-later", drover.Position(time.Now().Add(time.Minute).UnixMicro()), false)
	if err := fam.TidyRetireIndex(ctx, nil, []EmptiedQueue{{Queue: "idx-later", At: later}}); err != nil {
		t.Fatal(err)
	}
	if at := entries()["idx-later"]; !at.Equal(later) {
		t.Fatalf("postponed: want idx-later at %s, have %s", later, at)
	}
	if err := fam.TidyRetireIndex(ctx, nil, []EmptiedQueue{{Queue: "idx-later", At: start}}); err != nil {
		t.Fatal(err)
	}
	if at := entries()["idx-later"]; !at.Equal(later) {
		t.Fatalf("a postponement to an earlier time: want idx-later left at %s, have %s", later, at)
	}
}
