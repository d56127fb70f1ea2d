package queue

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// A queue with no outcome index (its first record, or none kept for the
// retention) has nothing to rotate and no later bucket to lower: its record
// costs ZRANGE, HSET, PEXPIREAT (the bucket), ZADD and PEXPIREAT (the
// index), not the three bookkeeping commands more (ZREMRANGEBYSCORE and two
// ZRANGEs on a key that does not exist) that every new bucket paid before.
// A message alone on its key, now and then, pays that path each time its
// index has expired (issue 43). The record is kept as before: a second
// record goes into the same bucket.
func TestARecordWithoutAnIndexSkipsTheBookkeeping(t *testing.T) {
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	keep := drover.Duration(time.Hour)
	policy := drover.Outcomes{Retention: &keep}
	rec := func(id string) {
		o := []drover.Outcome{{ID: id, State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()}}
		if err := s.recordOutcomes(ctx, s.keys.queue("q"), o, policy); err != nil {
			t.Fatal(err)
		}
	}
	rec("warm") // loads the script (its NOSCRIPT and EVAL are not the record's)
	if err := rdb.Del(ctx, s.keys.queue("q").done).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	rec("a")
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		have[strings.TrimPrefix(name, "cmdstat_")] = calls
	}
	delete(have, "info")
	delete(have, "config|resetstat")
	want := map[string]string{"evalsha": "1", "time": "1", "zrange": "1", "hset": "1", "pexpireat": "2", "zadd": "1"}
	if len(have) != len(want) {
		t.Fatalf("commands of a record without an index: want %v, have %v", want, have)
	}
	for k, v := range want {
		if have[k] != v {
			t.Fatalf("commands of a record without an index: want %v, have %v", want, have)
		}
	}
	rec("b")
	st, err := s.Jobs().JobStatus(ctx, "q", "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != drover.JobSucceeded {
		t.Fatalf("a's record: want succeeded, have %s", st.State)
	}
	n, err := rdb.ZCard(ctx, s.keys.queue("q").done).Result()
	if err != nil || n != 1 {
		t.Fatalf("buckets after two records: want 1, have %d (%v)", n, err)
	}
}

// The owner's note of its records' bucket (drover.RecordBucket): the trim
// that writes records answers the bucket, and the next records, with the
// note, cost one HSET (and a PTTL at the bucket's first such write) instead
// of the ZRANGE of the index, the HLEN and the HSET (issue 43). A note whose bucket is gone is not taken:
// nothing is created without its expiry, and the records go where a note
// would not have sent them. A full bucket's note is not taken either: the
// records rotate to a new bucket. Every record stays findable.
func TestTheOwnersNoteOfItsBucketSkipsFindingIt(t *testing.T) {
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	keep, max := drover.Duration(time.Hour), 16 // buckets of 2 records
	policy := drover.Outcomes{Retention: &keep, Max: max}
	var note drover.RecordBucket
	n := 0
	record := func() string {
		t.Helper()
		n++
		id := fmt.Sprintf("j%02d", n)
		o := []drover.Outcome{{ID: id, State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()}}
		if errs := s.Log().TrimMany(ctx, []drover.TrimRequest{{Queue: "q", Outcomes: o, Policy: policy, RecordsOnly: true, Bucket: &note}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		return id
	}
	ids := []string{record()} // the first: no note yet, the index made
	if note.Name == "" || note.Held != 1 || note.Expiry <= time.Now().UnixMilli() {
		t.Fatalf("after the first record: want a note of a bucket holding 1, have %+v", note)
	}
	first := note
	s.redisNow.now(ctx, rdb) // the estimate the committer's path only peeks at
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, record())
	// The bucket's first write by the note: HSET adds the marker too, so
	// the script asks PTTL whether the bucket was there; later ones are the
	// HSET alone (TestRecordsOnlyRequestsCostOneKeyEach). The call is
	// record-noted's first, so EVALSHA is answered NOSCRIPT and EVAL loads
	// it. The client checked the note by its estimate of Redis's clock,
	// read above: the call reads no TIME.
	if have, want := commandCalls(t, rdb), map[string]int{"evalsha": 1, "eval": 1, "pttl": 1, "hset": 1}; !maps.Equal(have, want) {
		t.Fatalf("a record with the note: want %v, have %v", want, have)
	}
	if note.Name != first.Name || note.Held != 2 {
		t.Fatalf("after the second record: want %s holding 2, have %+v", first.Name, note)
	}
	ids = append(ids, record()) // the bucket is full: a new one
	if note.Name == first.Name || note.Held != 1 {
		t.Fatalf("a full bucket's note: want a new bucket holding 1, have %+v (the full one %s)", note, first.Name)
	}
	done := s.keys.queue("q").done
	if err := rdb.Del(ctx, done+":"+note.Name).Err(); err != nil { // gone (an operator, a shorter expiry)
		t.Fatal(err)
	}
	gone := note.Name
	ids = append(ids, record())
	if note.Name == gone {
		t.Fatalf("a note of a bucket that is gone was taken: %+v", note)
	}
	keys, err := rdb.Keys(ctx, done+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if ttl, err := rdb.PTTL(ctx, k).Result(); err != nil || ttl <= 0 {
			t.Fatalf("bucket %s: want an expiry, have %v, %v", k, ttl, err)
		}
	}
	for _, id := range ids[:2] {
		st, err := s.Jobs().JobStatus(ctx, "q", id, 0)
		if err != nil || st.State != drover.JobSucceeded {
			t.Fatalf("%s: want its record found, have %+v, %v", id, st, err)
		}
	}
	if st, err := s.Jobs().JobStatus(ctx, "q", ids[3], 0); err != nil || st.State != drover.JobSucceeded {
		t.Fatalf("%s (written without the stale note): want its record found, have %+v, %v", ids[3], st, err)
	}
}
