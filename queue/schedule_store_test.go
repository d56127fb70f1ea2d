package queue_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/scheduler/schedulertest"
	"github.com/redis/go-redis/v9"
)

// The schedule store meets the same contract as the in-memory store the
// scheduler's own tests use, on standalone Redis and on Redis Cluster (the
// schedule keys live in different slots: no script may touch two of them).
func TestScheduleStoreContract(t *testing.T) {
	for _, b := range []struct {
		name   string
		client func(testing.TB) *schedEnv
	}{
		{"standalone", func(tb testing.TB) *schedEnv { return newSchedEnv(tb, schedStandalone(tb)) }},
		{"cluster", func(tb testing.TB) *schedEnv { return newSchedEnv(tb, schedCluster(tb)) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			schedulertest.RunContract(t, func(t *testing.T) (schedulertest.StoreCatalog, schedulertest.RawWriter) {
				e := b.client(t)
				return e.sched, e
			})
		})
	}
}

// TestScheduleDueIsBounded: with 3,000 entries due, one read returns
// LIMIT of them, lowest score first, and a tick with a small batch fires
// them all in several bounded reads.
func TestScheduleDueIsBounded(t *testing.T) {
	ctx := context.Background()
	env := newSchedEnv(t, schedStandalone(t))
	const n = 3000
	slot := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	pipe := env.rdb.Pipeline()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("e%04d", i)
		def := fmt.Sprintf(`{"queue":"bounded","task":"t","schedule":{"type":"at","at":%q}}`, slot.Format(time.RFC3339))
		pipe.HSet(ctx, env.prefix+":sched:"+name, "definition", def)
		pipe.ZAdd(ctx, env.prefix+":schedule", redis.Z{Score: float64(slot.Unix() - int64(n-i)), Member: name})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("write entries: %v", err)
	}
	recs, err := env.sched.DueSchedules(ctx, slot, 100)
	if err != nil {
		t.Fatalf("due: %v", err)
	}
	if len(recs) != 100 || recs[0].Name != "e0000" || recs[99].Name != "e0099" {
		t.Fatalf("due with LIMIT 100: want e0000…e0099, have %d entries (%s…)", len(recs), recs[0].Name)
	}
	// The scores above are not slots of an at entry (they are before it):
	// the scheduler plans them again, to the at time, and fires each once.
	clock := newSetClock(slot)
	enq := newEnqueuer(env.queue)
	s := newLoop(t, env.sched, enq, clock, scheduler.Config{BatchSize: 100})
	for i := 0; i < 2; i++ {
		if _, err := s.Tick(ctx); err != nil {
			t.Fatalf("tick: %v", err)
		}
	}
	if have := len(enq.acceptedIDs()); have != n {
		t.Fatalf("after two ticks with batches of 100: want %d fires, have %d", n, have)
	}
	if msgs := readQueue(t, env.queue, "bounded"); len(msgs) != n {
		t.Fatalf("queue holds %d messages, want %d", len(msgs), n)
	}
}

// TestScheduleRawRedisEntryFires adds an entry with the redis-cli commands
// docs/scheduler.md gives, and lets the real queue receive the job.
func TestScheduleRawRedisEntryFires(t *testing.T) {
	ctx := context.Background()
	env := newSchedEnv(t, schedStandalone(t))
	// HSET drover:sched:nightly definition '{…}'
	// ZADD drover:schedule 0 nightly
	def := `{"queue":"reports","task":"build","args":{"day":"mon"},` +
		`"schedule":{"type":"cron","expr":"5 4 * * mon","timezone":"Europe/Berlin"}}`
	if err := env.rdb.Do(ctx, "HSET", env.prefix+":sched:nightly", "definition", def).Err(); err != nil {
		t.Fatalf("HSET: %v", err)
	}
	if err := env.rdb.Do(ctx, "ZADD", env.prefix+":schedule", "0", "nightly").Err(); err != nil {
		t.Fatalf("ZADD: %v", err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	monday := time.Date(2030, 6, 3, 4, 5, 0, 0, berlin) // a Monday, 04:05 CEST
	clock := newSetClock(monday.Add(-time.Hour))
	s := newLoop(t, env.sched, newEnqueuer(env.queue), clock, scheduler.Config{})
	if _, err := s.Tick(ctx); err != nil { // plans 04:05
		t.Fatalf("tick: %v", err)
	}
	score, err := env.rdb.ZScore(ctx, env.prefix+":schedule", "nightly").Result()
	if err != nil || score != float64(monday.Unix()) {
		t.Fatalf("after planning: want score %d (04:05 CEST), have %v, %v", monday.Unix(), score, err)
	}
	clock.Set(monday.Add(300 * time.Millisecond))
	if _, err := s.Tick(ctx); err != nil {
		t.Fatalf("tick: %v", err)
	}
	msgs := readQueue(t, env.queue, "reports")
	if len(msgs) != 1 {
		t.Fatalf("queue reports: want 1 message, have %d", len(msgs))
	}
	m := msgs[0]
	wantID := fmt.Sprintf("sched:nightly:%d", monday.Unix())
	if m.ID != wantID || m.Task != "build" || string(m.Args) != `{"day":"mon"}` || m.Schedule != "nightly" || !m.FireAt.Equal(monday) {
		t.Fatalf("message: want id %s, task build, schedule nightly, fire_at %s; have %+v", wantID, monday, m)
	}
	meta, err := env.rdb.HGet(ctx, env.prefix+":sched:nightly", "meta").Result()
	if err != nil || !strings.Contains(meta, `"total_run_count":1`) || !strings.Contains(meta, fmt.Sprintf(`"last_fire":%d`, monday.Unix())) {
		t.Fatalf("meta: want total_run_count 1 and last_fire %d, have %s (%v)", monday.Unix(), meta, err)
	}
	next, _ := env.rdb.ZScore(ctx, env.prefix+":schedule", "nightly").Result()
	if want := monday.AddDate(0, 0, 7); next != float64(want.Unix()) {
		t.Fatalf("after the fire: want score %d (next Monday), have %v", want.Unix(), next)
	}
}

// TestScheduleMalformedListedInvalid: a malformed entry is parked, listed
// with its error, and does not stop the others.
func TestScheduleMalformedListedInvalid(t *testing.T) {
	ctx := context.Background()
	env := newSchedEnv(t, schedStandalone(t))
	env.Put("broken", []byte(`{"queue":"q","task":"t","schedule":{"type":"cron","expr":"99 * * * *"}}`), 0)
	env.Put("garbage", []byte(`not json`), 0)
	m := scheduler.NewManager(env.sched)
	if err := m.Add(ctx, scheduler.Definition{Name: "ok", Queue: "q", Task: "t",
		Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Second}}); err != nil {
		t.Fatalf("add: %v", err)
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := newSetClock(start)
	enq := newEnqueuer(env.queue)
	s := newLoop(t, env.sched, enq, clock, scheduler.Config{})
	for i := 0; i < 3; i++ {
		clock.Set(start.Add(time.Duration(i) * time.Second))
		if _, err := s.Tick(ctx); err != nil {
			t.Fatalf("tick: %v", err)
		}
	}
	if have := len(readQueue(t, env.queue, "q")); have != 3 {
		t.Fatalf("the valid entry: want 3 fires, have %d", have)
	}
	for _, name := range []string{"broken", "garbage"} {
		if score, _ := env.rdb.ZScore(ctx, env.prefix+":schedule", name).Result(); !math.IsInf(score, 1) {
			t.Errorf("%s: want parked at +inf, have %v", name, score)
		}
	}
	list, err := m.List(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	states := map[string]string{}
	for _, e := range list {
		states[e.Name] = string(e.State)
		if e.Err != nil {
			states[e.Name] += ": " + e.Err.Error()
		}
	}
	if !strings.HasPrefix(states["broken"], "invalid: schedule.expr: ") ||
		!strings.HasPrefix(states["garbage"], "invalid: definition: not valid JSON") ||
		states["ok"] != "scheduled" {
		t.Fatalf("list: want broken and garbage invalid naming the field, ok scheduled; have %q", states)
	}
}

// TestScheduleAdvanceRefusesStaleScore drives the CAS directly, as two
// schedulers would: the one that read the old score loses.
func TestScheduleAdvanceRefusesStaleScore(t *testing.T) {
	ctx := context.Background()
	env := newSchedEnv(t, schedStandalone(t))
	env.Put("x", []byte(`{"queue":"q","task":"t","schedule":{"type":"interval","every":"1m"}}`), 1893456000)
	won, err := env.sched.AdvanceSchedule(ctx, "x", 1893456000, 1893456060)
	if err != nil || !won {
		t.Fatalf("first advance: want true, have %v, %v", won, err)
	}
	won, err = env.sched.AdvanceSchedule(ctx, "x", 1893456000, 1893456060)
	if err != nil || won {
		t.Fatalf("second advance from the stale score: want false, have %v, %v", won, err)
	}
	// An update (score back to 0) also beats a scheduler holding the old
	// score.
	if err := scheduler.NewManager(env.sched).Update(ctx, scheduler.Definition{Name: "x", Queue: "q", Task: "t",
		Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: 2 * time.Minute}}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if won, _ := env.sched.AdvanceSchedule(ctx, "x", 1893456060, 1893456120); won {
		t.Fatalf("advance after an update: want false (score was reset to 0)")
	}
	if score, _ := env.rdb.ZScore(ctx, env.prefix+":schedule", "x").Result(); score != 0 {
		t.Fatalf("after update: want score 0, have %v", score)
	}
}
