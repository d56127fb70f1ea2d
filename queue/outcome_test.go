package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(
	contractCase{"OutcomeBucketExpiryFixedAtCreation", testOutcomeBucketExpiryFixed},
	contractCase{"OutcomeBoundRaised", testOutcomeBoundRaised},
	contractCase{"OutcomeBoundLowered", testOutcomeBoundLowered},
	contractCase{"OutcomeRetentionRaised", testOutcomeRetentionRaised},
	contractCase{"OutcomeRetentionLowered", testOutcomeRetentionLowered},
)

// bucket is one entry of a queue's record index, as Redis holds it.
type bucket struct {
	member string
	score  int64 // the index's expiry, unix ms
	expiry int64 // the bucket key's PEXPIRETIME (-2: gone)
	ids    []string
}

// buckets reads a queue's record index, oldest first, and checks what
// every record call must leave: each bucket's key expires when its index
// entry says (or is gone once that time has passed), the index is in age
// order (by expiry, then by counter) and expires no earlier than its
// newest bucket.
func buckets(t *testing.T, rdb redis.UniversalClient, s *Store, q string) []bucket {
	t.Helper()
	ctx := context.Background()
	done := s.keys.queue(q).done
	zs, err := rdb.ZRangeWithScores(ctx, done, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	now := redisNowMs(t, rdb)
	var bs []bucket
	lastN := int64(-1)
	for _, z := range zs {
		b := bucket{member: z.Member.(string), score: int64(z.Score)}
		key := done + ":" + b.member
		if b.expiry, err = rdb.Do(ctx, "PEXPIRETIME", key).Int64(); err != nil {
			t.Fatal(err)
		}
		if b.ids, err = rdb.HKeys(ctx, key).Result(); err != nil {
			t.Fatal(err)
		}
		switch {
		case b.expiry == -1:
			t.Fatalf("bucket %s has no expiry", key)
		case b.expiry == -2 && b.score > now:
			t.Fatalf("bucket %s is gone before its expiry %d (now %d)", key, b.score, now)
		case b.expiry >= 0 && b.expiry != b.score:
			t.Fatalf("bucket %s expires at %d, its index entry says %d", key, b.expiry, b.score)
		}
		nStr, _, _ := strings.Cut(b.member, ":")
		n, err := strconv.ParseInt(nStr, 10, 64)
		if err != nil || n <= lastN {
			t.Fatalf("index of %s out of age order: %v", q, zs)
		}
		lastN = n
		bs = append(bs, b)
	}
	if len(bs) > 0 {
		exp, err := rdb.Do(ctx, "PEXPIRETIME", done).Int64()
		if err != nil {
			t.Fatal(err)
		}
		if newest := bs[len(bs)-1].score; exp < newest {
			t.Fatalf("the index of %s expires at %d, before its newest bucket (%d)", q, exp, newest)
		}
	}
	return bs
}

func redisNowMs(t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMilli()
}

// holding returns the bucket that holds id.
func holding(t *testing.T, bs []bucket, id string) bucket {
	t.Helper()
	for _, b := range bs {
		for _, x := range b.ids {
			if x == id {
				return b
			}
		}
	}
	t.Fatalf("no bucket holds %s: %+v", id, bs)
	return bucket{}
}

// recordOne writes one record of id with policy and returns Redis's time
// just before the write, in unix ms.
func recordOne(t *testing.T, rdb redis.UniversalClient, s *Store, q, id string, policy drover.Outcomes) int64 {
	t.Helper()
	before := redisNowMs(t, rdb)
	rec := []drover.Outcome{{ID: id, State: drover.JobSucceeded, FinishedAt: time.Now()}}
	if _, err := s.Log().TrimRecording(context.Background(), q, 0, 0, rec, policy); err != nil {
		t.Fatal(err)
	}
	return before
}

func countOutcomes(t *testing.T, s *Store, q string) int64 {
	t.Helper()
	n, err := s.Jobs().Outcomes(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A bucket's expiry is set when it is made and not moved by later records
// (the common case is one HSET), and it covers the retention of every
// record written into it; once it holds the bound's eighth, the next record
// goes to a new bucket.
func testOutcomeBucketExpiryFixed(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	const q = "fixed"
	keep := drover.Duration(time.Hour)
	policy := drover.Outcomes{Max: 64, Retention: &keep} // 8 per bucket
	var first bucket
	for i := range 8 {
		id := fmt.Sprintf("f%d", i)
		before := recordOne(t, rdb, s, q, id, policy)
		bs := buckets(t, rdb, s, q)
		if len(bs) != 1 {
			t.Fatalf("after %d records with 8 per bucket: want 1 bucket, have %+v", i+1, bs)
		}
		if i == 0 {
			first = bs[0]
		} else if bs[0].member != first.member || bs[0].score != first.score {
			t.Fatalf("record %d moved the bucket: was %+v, is %+v", i, first, bs[0])
		}
		if b := holding(t, bs, id); b.score < before+time.Hour.Milliseconds() {
			t.Fatalf("%s written at %d is kept until %d, less than the retention", id, before, b.score)
		}
	}
	recordOne(t, rdb, s, q, "f8", policy)
	bs := buckets(t, rdb, s, q)
	if len(bs) != 2 || holding(t, bs, "f8").member == first.member {
		t.Fatalf("the 9th record with 8 per bucket: want it in a second bucket, have %+v", bs)
	}
	wantState(t, jobStatus(t, s, q, "f0", 0), drover.JobSucceeded)
	wantState(t, jobStatus(t, s, q, "f8", 0), drover.JobSucceeded)
}

// A raised bound keeps more records from then on, and never fewer than
// the old bound allowed.
func testOutcomeBoundRaised(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	const q = "raised"
	for i := range 40 {
		recordOne(t, rdb, s, q, fmt.Sprintf("a%02d", i), drover.Outcomes{Max: 16})
		if n := countOutcomes(t, s, q); n > 16 {
			t.Fatalf("max 16: %d records kept after %d", n, i+1)
		}
	}
	if n := countOutcomes(t, s, q); n < 14 {
		t.Fatalf("max 16, 40 written: want 14–16 kept, have %d", n)
	}
	for i := range 100 {
		recordOne(t, rdb, s, q, fmt.Sprintf("b%02d", i), drover.Outcomes{Max: 64})
		n := countOutcomes(t, s, q)
		if n > 64 {
			t.Fatalf("max raised to 64: %d records kept after %d", n, i+1)
		}
		if i >= 16 && n < 14 {
			t.Fatalf("max raised to 64: fewer records kept (%d) than under 16", n)
		}
	}
	if n := countOutcomes(t, s, q); n < 56 {
		t.Fatalf("max raised to 64, 100 written since: want 56–64 kept, have %d", n)
	}
	buckets(t, rdb, s, q)
	wantState(t, jobStatus(t, s, q, "b99", 0), drover.JobSucceeded)
	wantState(t, jobStatus(t, s, q, "a00", 0), drover.JobUnknown)
}

// A lowered bound applies at the first record when the current bucket
// already holds the new eighth, and within the new eighth of records
// otherwise; the newest records stay.
func testOutcomeBoundLowered(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	// The current bucket is full: the next record rotates and applies the
	// bound at once.
	const q = "lowered"
	for i := range 64 {
		recordOne(t, rdb, s, q, fmt.Sprintf("a%02d", i), drover.Outcomes{Max: 64})
	}
	if n := countOutcomes(t, s, q); n != 64 {
		t.Fatalf("max 64, 64 written: want 64 kept, have %d", n)
	}
	recordOne(t, rdb, s, q, "b00", drover.Outcomes{Max: 8})
	if n := countOutcomes(t, s, q); n > 8 {
		t.Fatalf("max lowered to 8: want at most 8 kept after the next record, have %d", n)
	}
	buckets(t, rdb, s, q)
	wantState(t, jobStatus(t, s, q, "b00", 0), drover.JobSucceeded)
	wantState(t, jobStatus(t, s, q, "a00", 0), drover.JobUnknown)

	// The current bucket holds one record (57 = 7 × 8 + 1), fewer than the
	// new eighth (2): the bound applies once it holds 2.
	const q2 = "lowered-partly"
	for i := range 57 {
		recordOne(t, rdb, s, q2, fmt.Sprintf("a%02d", i), drover.Outcomes{Max: 64})
	}
	for i := range 3 {
		recordOne(t, rdb, s, q2, fmt.Sprintf("b%d", i), drover.Outcomes{Max: 16})
	}
	if n := countOutcomes(t, s, q2); n > 16 {
		t.Fatalf("max lowered to 16 (2 per bucket): want at most 16 kept after 3 records, have %d", n)
	}
	buckets(t, rdb, s, q2)
	wantState(t, jobStatus(t, s, q2, "b2", 0), drover.JobSucceeded)
}

// A raised retention: the next record does not go into a bucket that
// would expire before the new retention.
func testOutcomeRetentionRaised(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	const q = "keep-raised"
	hour, day := drover.Duration(time.Hour), drover.Duration(24*time.Hour)
	recordOne(t, rdb, s, q, "short", drover.Outcomes{Retention: &hour})
	before := recordOne(t, rdb, s, q, "long", drover.Outcomes{Retention: &day})
	bs := buckets(t, rdb, s, q)
	if b := holding(t, bs, "long"); b.score < before+day.Std().Milliseconds() {
		t.Fatalf("retention raised to 24h: the record is kept until %d, less than 24h after %d", b.score, before)
	}
	if b := holding(t, bs, "short"); b.score < before+hour.Std().Milliseconds() {
		t.Fatalf("the record written under 1h lost its retention: %+v", b)
	}
	wantState(t, jobStatus(t, s, q, "short", 0), drover.JobSucceeded)
	wantState(t, jobStatus(t, s, q, "long", 0), drover.JobSucceeded)
}

// A lowered retention applies to the records kept (their buckets expire no
// later than the new retention allows, still no earlier than it), and
// later records go into one new bucket, not one each.
func testOutcomeRetentionLowered(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	const q = "keep-lowered"
	hour, day := drover.Duration(time.Hour), drover.Duration(24*time.Hour)
	width := hour.Std().Milliseconds() / 8
	oldWritten := recordOne(t, rdb, s, q, "old", drover.Outcomes{Retention: &day})
	before := recordOne(t, rdb, s, q, "new", drover.Outcomes{Retention: &hour})
	after := redisNowMs(t, rdb)
	bs := buckets(t, rdb, s, q)
	for _, b := range bs {
		if b.score > after+width+hour.Std().Milliseconds() {
			t.Fatalf("retention lowered to 1h: a bucket still expires at %d, later than %d + 1h + its width", b.score, after)
		}
	}
	if b := holding(t, bs, "old"); b.score < oldWritten+hour.Std().Milliseconds() {
		t.Fatalf("the record written before the change is kept less than the new retention: %+v", b)
	}
	if b := holding(t, bs, "new"); b.score < before+hour.Std().Milliseconds() {
		t.Fatalf("the record written under 1h is kept less than 1h: %+v", b)
	}
	for i := range 5 {
		recordOne(t, rdb, s, q, fmt.Sprintf("more%d", i), drover.Outcomes{Retention: &hour})
	}
	if again := buckets(t, rdb, s, q); len(again) != len(bs) {
		t.Fatalf("5 more records under the lowered retention: want them in the current bucket, have %d buckets, were %d", len(again), len(bs))
	}
	wantState(t, jobStatus(t, s, q, "old", 0), drover.JobSucceeded)
	wantState(t, jobStatus(t, s, q, "more4", 0), drover.JobSucceeded)
}
