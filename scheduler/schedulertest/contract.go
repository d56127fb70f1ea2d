package schedulertest

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/scheduler"
)

// RawWriter writes an entry the way a program in another language does
// (docs/scheduler.md): the definition (unless nil), then the score.
type RawWriter interface {
	Put(name string, definition []byte, score float64)
}

// NewFunc returns an empty store for one test, and a raw writer into it.
type NewFunc func(t *testing.T) (StoreCatalog, RawWriter)

// RunContract runs the contract every scheduler.Store + scheduler.Catalog
// implementation must meet. Each case gets a fresh store from newStore.
func RunContract(t *testing.T, newStore NewFunc) {
	t.Run("CatalogRoundTrip", func(t *testing.T) { testCatalogRoundTrip(t, newStore) })
	t.Run("DueIsOrderedAndBounded", func(t *testing.T) { testDue(t, newStore) })
	t.Run("AdvanceIsCompareAndSet", func(t *testing.T) { testAdvance(t, newStore) })
	t.Run("RecordFiresCommutes", func(t *testing.T) { testRecordFires(t, newStore) })
}

func def(name string) []byte {
	return []byte(`{"name":"` + name + `","queue":"q","task":"t","schedule":{"type":"interval","every":"1m"}}`)
}

func testCatalogRoundTrip(t *testing.T, newStore NewFunc) {
	ctx := context.Background()
	st, _ := newStore(t)
	for _, n := range []string{"b", "a"} {
		if err := st.CreateSchedule(ctx, n, def(n)); err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
	}
	if err := st.CreateSchedule(ctx, "a", def("a")); !errors.Is(err, scheduler.ErrExists) {
		t.Fatalf("create a twice: want ErrExists, have %v", err)
	}
	r, err := st.GetSchedule(ctx, "a")
	if err != nil {
		t.Fatalf("get a: %v", err)
	}
	if string(r.Definition) != string(def("a")) || r.Score != scheduler.ScorePlan || r.Meta != nil {
		t.Fatalf("get a: want definition %s, score 0, no meta; have %s, %v, %s", def("a"), r.Definition, r.Score, r.Meta)
	}
	// Replace keeps the meta and sends the entry back to planning.
	if ok, err := st.AdvanceSchedule(ctx, "a", 0, 100); !ok || err != nil {
		t.Fatalf("advance a 0→100: want true, have %v, %v", ok, err)
	}
	if err := st.RecordScheduleFires(ctx, "a", 1, time.Unix(60, 0), time.Unix(61, 0)); err != nil {
		t.Fatalf("record fires: %v", err)
	}
	changed := []byte(`{"name":"a","queue":"q2","task":"t","schedule":{"type":"interval","every":"2m"}}`)
	if err := st.ReplaceSchedule(ctx, "a", changed); err != nil {
		t.Fatalf("replace a: %v", err)
	}
	r, err = st.GetSchedule(ctx, "a")
	if err != nil {
		t.Fatalf("get a: %v", err)
	}
	var meta scheduler.Meta
	if err := json.Unmarshal(r.Meta, &meta); err != nil {
		t.Fatalf("meta after replace: %v (%s)", err, r.Meta)
	}
	if string(r.Definition) != string(changed) || r.Score != scheduler.ScorePlan || meta.TotalRunCount != 1 {
		t.Fatalf("after replace: want new definition, score 0, run count 1; have %s, %v, %d", r.Definition, r.Score, meta.TotalRunCount)
	}
	if err := st.ReplaceSchedule(ctx, "nope", def("nope")); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("replace missing: want ErrNotFound, have %v", err)
	}
	list, err := st.ListSchedules(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if names := recordNames(list); !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Fatalf("list: want [a b], have %v", names)
	}
	if err := st.DeleteSchedule(ctx, "a"); err != nil {
		t.Fatalf("delete a: %v", err)
	}
	if _, err := st.GetSchedule(ctx, "a"); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("get deleted: want ErrNotFound, have %v", err)
	}
	if err := st.DeleteSchedule(ctx, "a"); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("delete twice: want ErrNotFound, have %v", err)
	}
	// A fire recorded after the delete must not resurrect the entry.
	if err := st.RecordScheduleFires(ctx, "a", 1, time.Unix(120, 0), time.Unix(121, 0)); err != nil {
		t.Fatalf("record fires of deleted: %v", err)
	}
	if _, err := st.GetSchedule(ctx, "a"); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("get after late record: want ErrNotFound, have %v", err)
	}
	if err := st.CreateSchedule(ctx, "a", def("a")); err != nil {
		t.Fatalf("create a again after delete: %v", err)
	}
}

func recordNames(recs []scheduler.Record) []string {
	names := []string{}
	for _, r := range recs {
		names = append(names, r.Name)
	}
	return names
}

func testDue(t *testing.T, newStore NewFunc) {
	ctx := context.Background()
	st, raw := newStore(t)
	for i, n := range []string{"e10", "e20", "e30", "e40"} {
		raw.Put(n, def(n), float64(10*(i+1)))
	}
	raw.Put("parked", def("parked"), math.Inf(1))
	raw.Put("new", def("new"), 0)

	recs, err := st.DueSchedules(ctx, time.Unix(25, 0), 10)
	if err != nil {
		t.Fatalf("due until 25: %v", err)
	}
	if names := recordNames(recs); !reflect.DeepEqual(names, []string{"new", "e10", "e20"}) {
		t.Fatalf("due until 25: want [new e10 e20], have %v", names)
	}
	if string(recs[1].Definition) != string(def("e10")) || recs[1].Score != 10 {
		t.Fatalf("due e10: want its definition and score 10, have %s, %v", recs[1].Definition, recs[1].Score)
	}
	recs, err = st.DueSchedules(ctx, time.Unix(1e9, 0), 2)
	if err != nil {
		t.Fatalf("due with limit 2: %v", err)
	}
	if names := recordNames(recs); !reflect.DeepEqual(names, []string{"new", "e10"}) {
		t.Fatalf("due with limit 2: want [new e10], have %v", names)
	}
	recs, err = st.DueSchedules(ctx, time.Unix(1e9, 0), 100)
	if err != nil {
		t.Fatalf("due far ahead: %v", err)
	}
	if len(recs) != 5 {
		t.Fatalf("due far ahead: want 5 entries (the parked one never), have %v", recordNames(recs))
	}
	next, ok, err := st.NextScheduleDue(ctx, time.Unix(20, 0))
	if err != nil || !ok || !next.Equal(time.Unix(30, 0)) {
		t.Fatalf("next due after 20: want 30, have %v %v %v", next, ok, err)
	}
	if _, ok, err := st.NextScheduleDue(ctx, time.Unix(40, 0)); err != nil || ok {
		t.Fatalf("next due after 40: want none (parked is not due), have ok=%v err=%v", ok, err)
	}
}

func testAdvance(t *testing.T, newStore NewFunc) {
	ctx := context.Background()
	st, raw := newStore(t)
	raw.Put("x", def("x"), 100)
	if ok, err := st.AdvanceSchedule(ctx, "x", 90, 200); ok || err != nil {
		t.Fatalf("advance from stale 90: want false, have %v, %v", ok, err)
	}
	if r, _ := st.GetSchedule(ctx, "x"); r.Score != 100 {
		t.Fatalf("stale advance changed the score: want 100, have %v", r.Score)
	}
	if ok, err := st.AdvanceSchedule(ctx, "x", 100, 200); !ok || err != nil {
		t.Fatalf("advance from 100: want true, have %v, %v", ok, err)
	}
	if ok, _ := st.AdvanceSchedule(ctx, "x", 100, 300); ok {
		t.Fatalf("second advance from 100: want false (score is 200)")
	}
	if ok, err := st.AdvanceSchedule(ctx, "x", 200, math.Inf(1)); !ok || err != nil {
		t.Fatalf("park: want true, have %v, %v", ok, err)
	}
	if ok, err := st.AdvanceSchedule(ctx, "x", math.Inf(1), 0); !ok || err != nil {
		t.Fatalf("unpark: want true, have %v, %v", ok, err)
	}
	if ok, err := st.AdvanceSchedule(ctx, "x", 0, 1700000000.5); !ok || err != nil {
		t.Fatalf("advance to a fraction: want true, have %v, %v", ok, err)
	}
	if ok, err := st.AdvanceSchedule(ctx, "x", 1700000000.5, 1700000001); !ok || err != nil {
		t.Fatalf("advance from a fraction: want true, have %v, %v", ok, err)
	}
	if ok, err := st.AdvanceSchedule(ctx, "missing", 0, 10); ok || err != nil {
		t.Fatalf("advance missing: want false, have %v, %v", ok, err)
	}
	if _, err := st.GetSchedule(ctx, "missing"); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("advance created a missing entry: %v", err)
	}
}

func testRecordFires(t *testing.T, newStore NewFunc) {
	ctx := context.Background()
	st, raw := newStore(t)
	raw.Put("x", def("x"), 100)
	ran200 := time.Date(2030, 1, 1, 0, 0, 0, 500_000_000, time.UTC)
	if err := st.RecordScheduleFires(ctx, "x", 2, time.Unix(200, 0), ran200); err != nil {
		t.Fatalf("record: %v", err)
	}
	// A record of an earlier slot arriving late adds to the count only.
	if err := st.RecordScheduleFires(ctx, "x", 1, time.Unix(100, 0), ran200.Add(time.Hour)); err != nil {
		t.Fatalf("record: %v", err)
	}
	r, err := st.GetSchedule(ctx, "x")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	var meta scheduler.Meta
	if err := json.Unmarshal(r.Meta, &meta); err != nil {
		t.Fatalf("decode meta %s: %v", r.Meta, err)
	}
	want := scheduler.Meta{TotalRunCount: 3, LastFire: time.Unix(200, 0).UTC(), LastRunAt: ran200}
	if meta.TotalRunCount != want.TotalRunCount || !meta.LastFire.Equal(want.LastFire) || !meta.LastRunAt.Equal(want.LastRunAt) {
		t.Fatalf("meta: want %+v, have %+v (%s)", want, meta, r.Meta)
	}
}
