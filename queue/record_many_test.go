package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

var _ = addContractCases(contractCase{"RecordsOnlyRequestsAreWrittenAndAnswerTheirNotes", testRecordsOnlyRequests})

// The records-only requests of a commit flush (the committer's, each with
// its owner's note of its bucket) go in record-many calls: every record is
// kept, each request's note is answered with the bucket its records went
// to, and a note that names a bucket gone since (a retire, an operator)
// makes a new one rather than writing into nothing. On a Cluster the
// queues of one call share a slot.
func testRecordsOnlyRequests(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	keep := drover.Duration(time.Hour)
	policy := drover.Outcomes{Retention: &keep}
	const queues = 5
	notes := make([]*drover.RecordBucket, queues)
	for i := range notes {
		notes[i] = new(drover.RecordBucket)
	}
	send := func(round int) {
		t.Helper()
		reqs := make([]drover.TrimRequest, queues)
		for i := range reqs {
			reqs[i] = drover.TrimRequest{Queue: fmt.Sprintf("rec%d", i), Offset: 1, RecordsOnly: true, Policy: policy, Bucket: notes[i],
				Outcomes: []drover.Outcome{{ID: fmt.Sprintf("m%d-%d", i, round), State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()}}}
		}
		for i, err := range s.Log().TrimMany(ctx, reqs) {
			if err != nil {
				t.Fatalf("round %d, queue %d: %v", round, i, err)
			}
		}
	}
	send(0)
	s.redisNow.now(ctx, rdb) // the estimate the committer's path only peeks at: the notes take record-noted
	first := *notes[0]
	if first.Name == "" || first.Held != 1 {
		t.Fatalf("want the first record's bucket noted with 1 record, have %+v", first)
	}
	send(1)
	if notes[0].Name != first.Name || notes[0].Held != 2 {
		t.Fatalf("want the second record in the noted bucket (2 records), have %+v after %+v", *notes[0], first)
	}
	// The noted bucket of rec0 is deleted behind its owner's back.
	if err := rdb.Del(ctx, s.keys.queue("rec0").done+":"+first.Name).Err(); err != nil {
		t.Fatal(err)
	}
	send(2)
	if notes[0].Name == first.Name || notes[0].Held != 1 {
		t.Fatalf("want a new bucket for a record whose noted bucket is gone, have %+v", *notes[0])
	}
	for i := range queues {
		for round := range 3 {
			if i == 0 && round < 2 {
				continue // deleted with its bucket
			}
			id := fmt.Sprintf("m%d-%d", i, round)
			st, err := s.Jobs().JobStatus(ctx, fmt.Sprintf("rec%d", i), id, 0)
			if err != nil || st.State != drover.JobSucceeded || st.FinishedAt == nil {
				t.Fatalf("want %s's record found, have %+v, %v", id, st, err)
			}
		}
	}
	ttl, err := rdb.PTTL(ctx, s.keys.queue("rec0").done+":"+notes[0].Name).Result()
	if err != nil || ttl <= 0 {
		t.Fatalf("want the new bucket to expire by itself, have PTTL %v, %v", ttl, err)
	}
	if n, err := rdb.Exists(ctx, s.keys.queue("rec0").done+":"+first.Name).Result(); err != nil || n != 0 {
		t.Fatalf("want the deleted bucket not made again (it would never expire), have %d, %v", n, err)
	}
}

// The scripts trust a note by the bucket's marker: HSET answers how many
// fields it added, one more than the records when the marker was new, the
// bucket having been deleted since the note. Two records with one id in the
// same write would hide that, and the bucket, made again without an expiry,
// would never go: such records are sent without their note (appendNote).
// The marker is not a record: the count and the recent records leave it out.
func TestARepeatedIDGoesWithoutItsNoteAndTheMarkerIsNoRecord(t *testing.T) {
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	keep := drover.Duration(time.Hour)
	policy := drover.Outcomes{Retention: &keep}
	note := new(drover.RecordBucket)
	send := func(ids ...string) {
		t.Helper()
		o := make([]drover.Outcome, len(ids))
		for i, id := range ids {
			o[i] = drover.Outcome{ID: id, State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()}
		}
		for _, err := range s.Log().TrimMany(ctx, []drover.TrimRequest{{Queue: "q", Offset: 1, RecordsOnly: true, Policy: policy, Bucket: note, Outcomes: o}}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	send("a") // makes the bucket
	send("b") // the first write by the note: the marker
	bucket := s.keys.queue("q").done + ":" + note.Name
	if ok, err := rdb.HExists(ctx, bucket, "").Result(); err != nil || !ok {
		t.Fatalf("want the noted bucket marked, have %v, %v", ok, err)
	}
	if n, err := s.Jobs().Outcomes(ctx, "q"); err != nil || n != 2 {
		t.Fatalf("want 2 records counted (the marker is none), have %d, %v", n, err)
	}
	if recent, err := s.Jobs().RecentOutcomes(ctx, "q", 10); err != nil || len(recent) != 2 {
		t.Fatalf("want the 2 records listed, have %+v, %v", recent, err)
	}
	if err := rdb.Del(ctx, bucket).Err(); err != nil {
		t.Fatal(err)
	}
	send("c", "c")
	keys, err := rdb.Keys(ctx, s.keys.queue("q").done+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("want the records' keys, have %v, %v", keys, err)
	}
	for _, k := range keys {
		if ttl, err := rdb.PTTL(ctx, k).Result(); err != nil || ttl <= 0 {
			t.Errorf("want %s to expire by itself, have PTTL %v, %v", k, ttl, err)
		}
	}
	if st, err := s.Jobs().JobStatus(ctx, "q", "c", 0); err != nil || st.State != drover.JobSucceeded {
		t.Fatalf("want c's record found, have %+v, %v", st, err)
	}
}

// A records-only request with its note costs one key in a record-noted
// call and the record's own command: one HSET, which with the bucket's
// marker also says that the noted bucket is there (docs/decisions.md,
// "Issue 43: the noted bucket's marker"). The note's expiry is checked by
// the client against its estimate of Redis's clock (a TIME of its own at
// most every 5 s), so the call reads no TIME and takes two arguments a
// record and one a queue; record-many took the index, eight arguments a
// queue and a TIME a call (docs/decisions.md, "Issue 43: noted records
// without the record function"), and trim-many before it five keys a
// queue and eleven more arguments, each a Lua string.
func TestRecordsOnlyRequestsCostOneKeyEach(t *testing.T) {
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	keep := drover.Duration(time.Hour)
	policy := drover.Outcomes{Retention: &keep}
	notes := []*drover.RecordBucket{{}, {}, {}}
	send := func(round int) {
		reqs := make([]drover.TrimRequest, len(notes))
		for i := range reqs {
			reqs[i] = drover.TrimRequest{Queue: fmt.Sprintf("q%d", i), Offset: 1, RecordsOnly: true, Policy: policy, Bucket: notes[i],
				Outcomes: []drover.Outcome{{ID: fmt.Sprintf("m%d-%d", i, round), State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()}}}
		}
		for _, err := range s.Log().TrimMany(ctx, reqs) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0)                  // loads the script, makes the buckets
	s.redisNow.now(ctx, rdb) // the estimate the committer's path only peeks at
	send(1)                  // the first write by the note marks the bucket
	for _, c := range []*redis.StatusCmd{rdb.ConfigResetStat(ctx), rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0")} {
		if c.Err() != nil {
			t.Fatal(c.Err())
		}
	}
	rdb.Do(ctx, "slowlog", "reset")
	send(2)
	rdb.ConfigSet(ctx, "slowlog-log-slower-than", "10000")
	log, err := rdb.SlowLogGet(ctx, 100).Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, e := range log {
		if len(e.Args) > 3 && e.Args[0] == "evalsha" {
			calls++
			if e.Args[1] != recordNotedScript.Hash() || e.Args[2] != "3" || len(e.Args) != 3+3+3*3 {
				t.Errorf("want one record-noted call with one key and three arguments per queue, have %v", e.Args)
			}
		}
	}
	if calls != 1 {
		t.Fatalf("want one script call, have %d: %+v", calls, log)
	}
	have := commandCalls(t, rdb)
	delete(have, "config|set")
	delete(have, "slowlog|reset")
	delete(have, "slowlog|get")
	if have["time"] <= 1 { // the client's estimate, read again in the background every 5 s
		delete(have, "time")
	}
	want := map[string]int{"evalsha": 1, "hset": 3}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("want %s %d times, have %v", k, v, have)
		}
	}
	if len(have) != len(want) {
		t.Errorf("want only %v, have %v", want, have)
	}
}

// A records-only request takes the record-noted call only when the client
// can vouch for what the record function would have checked in Redis: its
// note names a bucket these records do not fill past its size, whose expiry
// leaves every record its retention and is not past now + width +
// retention (each with notedMargin for the estimate of Redis's clock, which
// lags by up to a round trip), with distinct ids, none staged, and an
// estimate at all.
// Anything else takes record-many, whose script checks in Redis.
func TestRecordNotedArgsTakeOnlyNotesTheClientCanVouchFor(t *testing.T) {
	keep := drover.Duration(time.Hour)
	policy := drover.Outcomes{Retention: &keep, Max: 80} // buckets of 10
	const now = int64(1_800_000_000_000)
	keepMs := time.Hour.Milliseconds()
	width := keepMs / 8
	good := func() drover.TrimRequest {
		return drover.TrimRequest{Queue: "q", RecordsOnly: true, Policy: policy,
			Bucket:   &drover.RecordBucket{Name: "000000000001:1", Expiry: now + keepMs + width/2, Held: 3},
			Outcomes: []drover.Outcome{{ID: "a", State: drover.JobSucceeded}, {ID: "b", State: drover.JobSucceeded}}}
	}
	if a, ok := recordNotedArgs(ptr(good()), 0, now); !ok || len(a) != 5 || a[0] != 2 {
		t.Fatalf("a note the client can vouch for: want the record-noted arguments (k, then id and record twice), have %v, %v", a, ok)
	}
	for _, c := range []struct {
		name   string
		edit   func(r *drover.TrimRequest)
		staged int
		now    int64
	}{
		{"no estimate of Redis's clock", func(*drover.TrimRequest) {}, 0, 0},
		{"not records-only", func(r *drover.TrimRequest) { r.RecordsOnly = false }, 0, now},
		{"no note", func(r *drover.TrimRequest) { r.Bucket = &drover.RecordBucket{} }, 0, now},
		{"records staged", func(*drover.TrimRequest) {}, 1, now},
		{"records off", func(r *drover.TrimRequest) { zero := drover.Duration(0); r.Policy.Retention = &zero }, 0, now},
		{"the records would fill the bucket past its size", func(r *drover.TrimRequest) { r.Bucket.Held = 9 }, 0, now},
		{"the bucket expires inside the margin", func(r *drover.TrimRequest) {
			r.Bucket.Expiry = now + keepMs + notedMargin.Milliseconds() - 1
		}, 0, now},
		{"the bucket expires past now + width + retention + the margin", func(r *drover.TrimRequest) {
			r.Bucket.Expiry = now + keepMs + width + notedMargin.Milliseconds() + 1
		}, 0, now},
		{"two records share an id", func(r *drover.TrimRequest) { r.Outcomes[1].ID = "a" }, 0, now},
	} {
		r := good()
		c.edit(&r)
		if a, ok := recordNotedArgs(&r, c.staged, c.now); ok {
			t.Errorf("%s: want the record-many path, have record-noted arguments %v", c.name, a)
		}
	}
	r := good()
	r.Bucket.Held = 8 // 8 + 2 records: the bucket just full
	r.Bucket.Expiry = now + keepMs + notedMargin.Milliseconds()
	if _, ok := recordNotedArgs(&r, 0, now); !ok {
		t.Error("records that just fill the bucket, which expires at the margin: want the record-noted path")
	}
}

func ptr[T any](v T) *T { return &v }
