package scheduler_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/scheduler/schedulertest"
)

func TestMemStoreContract(t *testing.T) {
	schedulertest.RunContract(t, func(t *testing.T) (schedulertest.StoreCatalog, schedulertest.RawWriter) {
		m := schedulertest.NewMemStore()
		return m, m
	})
}

var t0 = time.Date(2030, 6, 1, 9, 59, 59, 0, time.UTC)

func TestTickPlansFiresAndAdvances(t *testing.T) {
	st := schedulertest.NewMemStore()
	clock := newClock(t0)
	q := newQueue()
	s := newScheduler(t, st, clock, q, scheduler.SoleLeader{})
	m := scheduler.NewManager(st)
	mustAdd(t, m, scheduler.Definition{
		Name: "minutely", Queue: "reports", Task: "build", Args: []byte(`{"k":1}`),
		Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Minute},
	})
	if e := mustGet(t, m, "minutely"); e.State != scheduler.StatePlanning {
		t.Fatalf("after add: want state planning, have %s", e.State)
	}
	tick(t, s, clock, t0) // plans the first slot, 10:00:00
	slot := time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
	if e := mustGet(t, m, "minutely"); e.State != scheduler.StateScheduled || !e.Next.Equal(slot) {
		t.Fatalf("after planning: want scheduled for %s, have %s %s", slot, e.State, e.Next)
	}
	if q.count() != 0 {
		t.Fatalf("planning fired: %v", q.ids())
	}
	next, err := s.Tick(context.Background())
	if err != nil || !next.Equal(slot) {
		t.Fatalf("tick before the slot: want next %s, have %s, %v", slot, next, err)
	}
	tick(t, s, clock, slot.Add(200*time.Millisecond))
	id := slotID("minutely", slot)
	if have := q.ids(); !reflect.DeepEqual(have, []string{id}) {
		t.Fatalf("want [%s], have %v", id, have)
	}
	msg := q.get(id)
	if msg.Queue != "reports" || msg.Task != "build" || string(msg.Args) != `{"k":1}` ||
		msg.Schedule != "minutely" || !msg.FireAt.Equal(slot) || id != "sched:minutely:1906538400" {
		t.Fatalf("message: have %+v", msg)
	}
	e := mustGet(t, m, "minutely")
	if e.Meta.TotalRunCount != 1 || !e.Meta.LastFire.Equal(slot) || !e.Next.Equal(slot.Add(time.Minute)) {
		t.Fatalf("after the fire: want count 1, last fire %s, next %s; have %+v next %s", slot, slot.Add(time.Minute), e.Meta, e.Next)
	}
	tick(t, s, clock, slot.Add(time.Second)) // nothing new is due
	if q.count() != 1 {
		t.Fatalf("fired again before the next slot: %v", q.ids())
	}
}

// TestCatchupPoliciesAfterOutage: hourly entries fire at 10:00, the
// scheduler is down from 10:30 to 13:30, missing 11:00, 12:00 and 13:00.
func TestCatchupPoliciesAfterOutage(t *testing.T) {
	st := schedulertest.NewMemStore()
	clock := newClock(t0)
	q := newQueue()
	s := newScheduler(t, st, clock, q, scheduler.SoleLeader{})
	m := scheduler.NewManager(st)
	for _, p := range []scheduler.Catchup{scheduler.CatchupOnce, scheduler.CatchupSkip, scheduler.CatchupAll} {
		mustAdd(t, m, scheduler.Definition{
			Name: "hourly-" + string(p), Queue: "q", Task: "t", Catchup: p,
			Schedule: scheduler.Spec{Type: scheduler.TypeCron, Expr: "0 * * * *"},
		})
	}
	hour := func(h int) time.Time { return time.Date(2030, 6, 1, h, 0, 0, 0, time.UTC) }
	tick(t, s, clock, t0)
	tick(t, s, clock, hour(10))
	tick(t, s, clock, hour(13).Add(30*time.Minute))
	tick(t, s, clock, hour(14))
	want := []string{
		slotID("hourly-all", hour(10)), slotID("hourly-all", hour(11)), slotID("hourly-all", hour(12)),
		slotID("hourly-all", hour(13)), slotID("hourly-all", hour(14)),
		slotID("hourly-once", hour(10)), slotID("hourly-once", hour(13)), slotID("hourly-once", hour(14)),
		slotID("hourly-skip", hour(10)), slotID("hourly-skip", hour(14)),
	}
	if have := sortedCopy(q.ids()); !reflect.DeepEqual(have, want) {
		t.Fatalf("after a 3-hour outage:\nwant %v\nhave %v", want, have)
	}
	for name, count := range map[string]int64{"hourly-all": 5, "hourly-once": 3, "hourly-skip": 2} {
		if e := mustGet(t, m, name); e.Meta.TotalRunCount != count || !e.Meta.LastFire.Equal(hour(14)) {
			t.Errorf("%s meta: want count %d, last fire 14:00; have %+v", name, count, e.Meta)
		}
	}
}

// TestDSTThroughTick runs the loop every 5 minutes through the Berlin
// autumn night: the daily 02:30 fires once, the hourly one fires for every
// real hour (02:00 CEST and 02:00 CET).
func TestDSTThroughTick(t *testing.T) {
	st := schedulertest.NewMemStore()
	start := time.Date(2025, 10, 25, 21, 0, 0, 0, time.UTC)
	clock := newClock(start)
	q := newQueue()
	s := newScheduler(t, st, clock, q, scheduler.SoleLeader{})
	m := scheduler.NewManager(st)
	mustAdd(t, m, scheduler.Definition{Name: "daily", Queue: "q", Task: "t",
		Schedule: scheduler.Spec{Type: scheduler.TypeCron, Expr: "30 2 * * *", Timezone: "Europe/Berlin"}})
	mustAdd(t, m, scheduler.Definition{Name: "hourly", Queue: "q", Task: "t",
		Schedule: scheduler.Spec{Type: scheduler.TypeCron, Expr: "0 * * * *", Timezone: "Europe/Berlin"}})
	for at := start; at.Before(time.Date(2025, 10, 26, 4, 0, 0, 0, time.UTC)); at = at.Add(5 * time.Minute) {
		tick(t, s, clock, at)
	}
	var daily, hourly []string
	for _, id := range q.ids() {
		if strings.HasPrefix(id, "sched:daily:") {
			daily = append(daily, id)
		} else {
			hourly = append(hourly, id)
		}
	}
	if want := []string{slotID("daily", time.Date(2025, 10, 26, 0, 30, 0, 0, time.UTC))}; !reflect.DeepEqual(daily, want) {
		t.Fatalf("daily 02:30 in the autumn night: want %v (02:30 CEST only), have %v", want, daily)
	}
	var wantHourly []string
	for h := 21; h <= 27; h++ { // 21:00Z (23:00 CEST) … 03:00Z (04:00 CET)
		wantHourly = append(wantHourly, slotID("hourly", time.Date(2025, 10, 25, h, 0, 0, 0, time.UTC)))
	}
	if !reflect.DeepEqual(hourly, wantHourly) {
		t.Fatalf("hourly: want one fire per real hour %v, have %v", wantHourly, hourly)
	}
}

func TestMalformedEntrySkippedAndListed(t *testing.T) {
	st := schedulertest.NewMemStore()
	clock := newClock(t0)
	q := newQueue()
	s := newScheduler(t, st, clock, q, scheduler.SoleLeader{})
	m := scheduler.NewManager(st)
	mustAdd(t, m, scheduler.Definition{Name: "good", Queue: "q", Task: "t",
		Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Second}})
	st.Put("badjson", []byte(`{"queue":"q",`), 0)
	st.Put("badzone", []byte(`{"queue":"q","task":"t","schedule":{"type":"cron","expr":"* * * * *","timezone":"Mars/Base"}}`), 0)
	st.Put("nodef", nil, 0)
	for i := 0; i < 3; i++ {
		tick(t, s, clock, t0.Add(time.Duration(i)*time.Second))
	}
	// The first slot (t0 itself) fires in the tick that plans it.
	want := []string{slotID("good", t0), slotID("good", t0.Add(time.Second)), slotID("good", t0.Add(2*time.Second))}
	if have := q.ids(); !reflect.DeepEqual(have, want) {
		t.Fatalf("the good entry keeps firing: want %v, have %v", want, have)
	}
	for _, n := range []string{"badjson", "badzone", "nodef"} {
		if score, _ := st.Score(n); !math.IsInf(score, 1) {
			t.Errorf("%s: want parked (+Inf) so that ticks skip it, have score %v", n, score)
		}
	}
	list, err := m.List(context.Background())
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	wantErr := map[string]string{
		"badjson": "definition: not valid JSON",
		"badzone": `schedule.timezone: unknown time zone "Mars/Base"`,
		"nodef":   "definition: missing",
	}
	if len(list) != 4 {
		t.Fatalf("list: want 4 entries, have %d", len(list))
	}
	for _, e := range list {
		if e.Name == "good" {
			if e.State != scheduler.StateScheduled || e.Err != nil {
				t.Errorf("good: want scheduled, have %s %v", e.State, e.Err)
			}
			continue
		}
		if e.State != scheduler.StateInvalid || e.Err == nil || !strings.HasPrefix(e.Err.Error(), wantErr[e.Name]) {
			t.Errorf("%s: want invalid with %q, have %s %v", e.Name, wantErr[e.Name], e.State, e.Err)
		}
	}
	if err := m.Enable(context.Background(), "badzone"); err == nil || !strings.Contains(err.Error(), "schedule.timezone") {
		t.Fatalf("enable an invalid entry: want an error naming schedule.timezone, have %v", err)
	}
}

// TestRawEntryIsPickedUp writes an entry the way another language does:
// the definition (without a name: the key names it), then score 0.
func TestRawEntryIsPickedUp(t *testing.T) {
	st := schedulertest.NewMemStore()
	clock := newClock(t0)
	q := newQueue()
	s := newScheduler(t, st, clock, q, scheduler.SoleLeader{})
	st.Put("x", []byte(`{"queue":"q","task":"t","args":[1,2],"schedule":{"type":"at","at":"2030-06-01T10:00:00Z"}}`), 0)
	tick(t, s, clock, t0)
	tick(t, s, clock, t0.Add(time.Second))
	tick(t, s, clock, t0.Add(time.Hour))
	at := time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
	if have := q.ids(); !reflect.DeepEqual(have, []string{slotID("x", at)}) {
		t.Fatalf("raw one-shot entry: want one fire at %s, have %v", at, have)
	}
	e := mustGet(t, scheduler.NewManager(st), "x")
	if e.State != scheduler.StateFinished || e.Definition.Name != "x" {
		t.Fatalf("after its one fire: want finished, named by its key; have %s %q", e.State, e.Definition.Name)
	}
}

func TestJitterDelaysButKeepsSlotID(t *testing.T) {
	st := schedulertest.NewMemStore()
	clock := newClock(t0)
	q := newQueue()
	s := newScheduler(t, st, clock, q, scheduler.SoleLeader{})
	m := scheduler.NewManager(st)
	slot := time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
	// Try names until one gets a non-zero offset (the offset is a hash).
	var name string
	var due time.Time
	for i := 0; name == ""; i++ {
		n := "jittery" + string(rune('a'+i))
		mustAdd(t, m, scheduler.Definition{Name: n, Queue: "q", Task: "t", Jitter: 50 * time.Second,
			Schedule: scheduler.Spec{Type: scheduler.TypeCron, Expr: "0 10 * * *"}})
		tick(t, s, clock, t0)
		e := mustGet(t, m, n)
		if off := e.Next.Sub(slot); off < 0 || off > 50*time.Second {
			t.Fatalf("%s: want next in [slot, slot+50s], have %s", n, e.Next)
		} else if off > 0 {
			name, due = n, e.Next
		}
	}
	before := q.count()
	tick(t, s, clock, due.Add(-time.Second))
	for _, id := range q.ids()[before:] {
		if strings.HasPrefix(id, "sched:"+name+":") {
			t.Fatalf("%s fired before its jittered time %s", name, due)
		}
	}
	tick(t, s, clock, due)
	msg := q.get(slotID(name, slot))
	if msg == nil || !msg.FireAt.Equal(slot) {
		t.Fatalf("%s at its jittered time: want id %s with fire_at %s, have %v (ids %v)", name, slotID(name, slot), slot, msg, q.ids())
	}
}

func TestManagerAPI(t *testing.T) {
	ctx := context.Background()
	st := schedulertest.NewMemStore()
	clock := newClock(t0)
	q := newQueue()
	s := newScheduler(t, st, clock, q, scheduler.SoleLeader{})
	m := scheduler.NewManager(st)
	def := scheduler.Definition{Name: "x", Queue: "q", Task: "t",
		Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Minute}}
	mustAdd(t, m, def)
	if err := m.Add(ctx, def); !errors.Is(err, scheduler.ErrExists) {
		t.Fatalf("add twice: want ErrExists, have %v", err)
	}
	bad := def
	bad.Schedule = scheduler.Spec{Type: scheduler.TypeCron, Expr: "0 0 * * *", Timezone: "Mars/Base"}
	var fe *scheduler.FieldError
	if err := m.Update(ctx, bad); !errors.As(err, &fe) || fe.Field != "schedule.timezone" {
		t.Fatalf("update with a bad zone: want a FieldError for schedule.timezone, have %v", err)
	}
	missing := def
	missing.Name = "nope"
	if err := m.Update(ctx, missing); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("update missing: want ErrNotFound, have %v", err)
	}
	tick(t, s, clock, t0)
	tick(t, s, clock, t0.Add(time.Second)) // fires 10:00
	if err := m.Disable(ctx, "x"); err != nil {
		t.Fatalf("disable: %v", err)
	}
	tick(t, s, clock, t0.Add(2*time.Second))
	if e := mustGet(t, m, "x"); e.State != scheduler.StateDisabled || !e.Definition.Disabled {
		t.Fatalf("after disable: want disabled, have %s", e.State)
	}
	tick(t, s, clock, t0.Add(5*time.Minute+1*time.Second)) // 10:05:00 would have fired
	if q.count() != 1 {
		t.Fatalf("a disabled entry fired: %v", q.ids())
	}
	if err := m.Enable(ctx, "x"); err != nil {
		t.Fatalf("enable: %v", err)
	}
	tick(t, s, clock, t0.Add(5*time.Minute+2*time.Second)) // plans 10:06, no catch-up of 10:01–10:05
	tick(t, s, clock, t0.Add(6*time.Minute+1*time.Second))
	want := []string{slotID("x", t0.Add(time.Second)), slotID("x", t0.Add(6*time.Minute+time.Second))}
	if have := q.ids(); !reflect.DeepEqual(have, want) {
		t.Fatalf("after enable: want %v (no catch-up of the disabled time), have %v", want, have)
	}
	if e := mustGet(t, m, "x"); e.Meta.TotalRunCount != 2 {
		t.Fatalf("meta kept across disable/enable: want count 2, have %d", e.Meta.TotalRunCount)
	}
	if err := m.Remove(ctx, "x"); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if _, err := m.Get(ctx, "x"); !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("get removed: want ErrNotFound, have %v", err)
	}
	if list, err := m.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("list after remove: want empty, have %v, %v", list, err)
	}
}

// TestTwoSchedulersNeverDoubleFire runs two schedulers on one store, both
// acting as leader, ticking concurrently through 30 seconds of slots.
func TestTwoSchedulersNeverDoubleFire(t *testing.T) {
	st := schedulertest.NewMemStore()
	clock := newClock(t0)
	q := newQueue()
	a := newScheduler(t, st, clock, q, scheduler.SoleLeader{})
	b := newScheduler(t, st, clock, q, scheduler.SoleLeader{})
	m := scheduler.NewManager(st)
	const entries, seconds = 20, 30
	for i := 0; i < entries; i++ {
		mustAdd(t, m, scheduler.Definition{Name: "e" + string(rune('a'+i)), Queue: "q", Task: "t",
			Catchup: scheduler.CatchupAll, Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Second}})
	}
	clock.Set(t0)
	for sec := 0; sec <= seconds; sec++ {
		clock.Set(t0.Add(time.Duration(sec) * time.Second))
		var wg sync.WaitGroup
		for _, s := range []*scheduler.Scheduler{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Tick(context.Background()); err != nil {
					t.Errorf("tick: %v", err)
				}
			}()
		}
		wg.Wait()
	}
	// Slots t0 … t0+30s for every entry (t0 is itself a slot), each
	// accepted once; and each entry's meta counts 31 fires: only the CAS
	// winner records.
	if have := q.count(); have != entries*(seconds+1) {
		t.Fatalf("want %d distinct fires, have %d", entries*(seconds+1), have)
	}
	for i := 0; i < entries; i++ {
		name := "e" + string(rune('a'+i))
		for sec := 0; sec <= seconds; sec++ {
			if q.get(slotID(name, t0.Add(time.Duration(sec)*time.Second))) == nil {
				t.Fatalf("%s: slot +%ds never fired", name, sec)
			}
		}
		if e := mustGet(t, m, name); e.Meta.TotalRunCount != seconds+1 {
			t.Fatalf("%s: want total_run_count %d, have %d (a slot was counted twice or lost)", name, seconds+1, e.Meta.TotalRunCount)
		}
	}
}

// fakeLeadership hands out terms when the test says so.
type fakeLeadership struct {
	grants chan context.Context
	calls  chan struct{}
}

func (f *fakeLeadership) Lead(ctx context.Context) (context.Context, error) {
	f.calls <- struct{}{}
	select {
	case term := <-f.grants:
		return term, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestSuspendedLeaderStopsFiring(t *testing.T) {
	st := schedulertest.NewMemStore()
	clock := newClock(t0)
	q := newQueue()
	var mu sync.Mutex
	leading := false
	q.check = func(ctx context.Context, m *drover.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if !leading || ctx.Err() != nil {
			t.Errorf("enqueued %s outside a term", m.ID)
		}
		return nil
	}
	lead := &fakeLeadership{grants: make(chan context.Context), calls: make(chan struct{}, 10)}
	s := newScheduler(t, st, clock, q, lead)
	mustAdd(t, scheduler.NewManager(st), scheduler.Definition{Name: "x", Queue: "q", Task: "t",
		Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Second}})

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	<-lead.calls
	term1, suspend := context.WithCancel(ctx)
	mu.Lock()
	leading = true
	mu.Unlock()
	lead.grants <- term1
	clock.Set(t0.Add(time.Second))
	eventually(t, "the first slot", func() bool { return q.count() == 1 })

	// Suspend: the scheduler must give up the term and wait for the next.
	mu.Lock()
	leading = false
	mu.Unlock()
	suspend()
	<-lead.calls
	clock.Set(t0.Add(5 * time.Second)) // slots +2s … +5s come due while suspended
	if q.count() != 1 {
		t.Fatalf("fired while suspended: %v", q.ids())
	}

	// A new term: catch-up once fires the latest missed slot only.
	mu.Lock()
	leading = true
	mu.Unlock()
	lead.grants <- ctx
	eventually(t, "the catch-up fire", func() bool { return q.count() == 2 })
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: want nil after cancel, have %v", err)
	}
	want := []string{slotID("x", t0.Add(time.Second)), slotID("x", t0.Add(5*time.Second))}
	if have := q.ids(); !reflect.DeepEqual(have, want) {
		t.Fatalf("want %v, have %v", want, have)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	st := schedulertest.NewMemStore()
	_, err := scheduler.New(scheduler.Config{Store: st, Leadership: scheduler.SoleLeader{}})
	if !errors.Is(err, drover.ErrInvalidConfig) || !strings.Contains(err.Error(), "Enqueuer") {
		t.Fatalf("missing Enqueuer: want ErrInvalidConfig naming Enqueuer, have %v", err)
	}
	_, err = scheduler.New(scheduler.Config{Store: st, Enqueuer: newQueue(), Leadership: scheduler.SoleLeader{}, BatchSize: -1})
	if !errors.Is(err, drover.ErrInvalidConfig) || !strings.Contains(err.Error(), "BatchSize") {
		t.Fatalf("negative BatchSize: want ErrInvalidConfig naming BatchSize, have %v", err)
	}
}
