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

// A records-only request with its note costs the record-many call one key
// and the record's own command: one HSET, which with the bucket's marker
// also says that the noted bucket is there (docs/decisions.md, "Issue 43:
// the noted bucket's marker"), one TIME a call; trim-many took five keys a queue and eleven more
// arguments, each a Lua string (docs/decisions.md, "Issue 43: records-only
// requests in a call of their own").
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
	send(0) // loads the script, makes the buckets
	send(1) // the first write by the note marks the bucket
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
			if e.Args[1] != recordManyScript.Hash() || e.Args[2] != "3" {
				t.Errorf("want one record-many call with one key per queue, have %v", e.Args[:3])
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
	want := map[string]int{"evalsha": 1, "time": 1, "hset": 3}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("want %s %d times, have %v", k, v, have)
		}
	}
	if len(have) != len(want) {
		t.Errorf("want only %v, have %v", want, have)
	}
}
