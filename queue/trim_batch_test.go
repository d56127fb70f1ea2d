package queue

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(contractCase{"TrimMany", testTrimMany})

// TrimMany trims each queue of the batch exactly as Trim would (a queue
// with more than one trim chunk too), keeps the outcome records given, and
// reports a bad request alone.
func testTrimMany(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	sizes := map[string]int{"tm-a": 3, "tm-b": 1500, "tm-c": 2}
	offsets := map[string]drover.Position{}
	for q, n := range sizes {
		msgs := make([]*drover.Message, n)
		for i := range msgs {
			msgs[i] = msg(q, "")
		}
		res, err := s.Producer().EnqueueBatch(ctx, msgs)
		if err != nil {
			t.Fatalf("EnqueueBatch %s: %v", q, err)
		}
		offsets[q] = res[n-2].Position // all but the last
	}
	rec := []drover.Outcome{{ID: "done-1", State: drover.JobSucceeded, Task: "t", Member: "w1"}}
	reqs := []drover.TrimRequest{
		{Queue: "tm-a", Offset: offsets["tm-a"], Outcomes: rec},
		{Queue: "bad queue", Offset: 1},
		{Queue: "tm-b", Offset: offsets["tm-b"]},
		{Queue: "tm-c", Offset: offsets["tm-c"]},
	}
	errs := s.Log().TrimMany(ctx, reqs)
	if len(errs) != len(reqs) {
		t.Fatalf("want %d results, have %d", len(reqs), len(errs))
	}
	if errs[1] == nil {
		t.Fatal("a bad queue name: want its error")
	}
	for _, i := range []int{0, 2, 3} {
		if errs[i] != nil {
			t.Fatalf("%s: %v", reqs[i].Queue, errs[i])
		}
		q := reqs[i].Queue
		qk := s.keys.queue(q)
		if n := zcountAfter(t, rdb, qk.log, 0); n != 1 {
			t.Fatalf("%s: want only the last entry left, have %d", q, n)
		}
		if n, err := rdb.HLen(ctx, qk.msg).Result(); err != nil || n != 1 {
			t.Fatalf("%s: want one envelope left, have %d, %v", q, n, err)
		}
	}
	if n, err := s.Jobs().Outcomes(ctx, "tm-a"); err != nil || n != 1 {
		t.Fatalf("tm-a: want its one record kept, have %d, %v", n, err)
	}
	if n, err := s.Jobs().Outcomes(ctx, "tm-c"); err != nil || n != 0 {
		t.Fatalf("tm-c: want no record, have %d, %v", n, err)
	}
}

var _ = addContractCases(contractCase{"TrimManyMatchesTrimRecording", testTrimManyMatchesTrimRecording})

// A queue trimmed by TrimMany ends as its twin trimmed by TrimRecording:
// the same log entries and envelopes left (a retried id's envelope kept),
// the same records kept under the same bound, over several trims in a row.
func testTrimManyMatchesTrimRecording(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	policy := drover.Outcomes{Max: 16}
	type twin struct{ one, many string }
	var twins []twin
	for i := range 70 { // more than one script call on a standalone server
		twins = append(twins, twin{fmt.Sprintf("tw%02d-one", i), fmt.Sprintf("tw%02d-many", i)})
	}
	offsets := map[string][]drover.Position{}
	for _, tw := range twins {
		for _, q := range []string{tw.one, tw.many} {
			msgs := make([]*drover.Message, 12)
			for i := range msgs {
				msgs[i] = msg(q, fmt.Sprintf("m%02d", i))
			}
			res, err := s.Producer().EnqueueBatch(ctx, msgs)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				offsets[q] = append(offsets[q], r.Position)
			}
			// m03 failed and waits as a retry: its envelope stays.
			if err := s.Log().Retry(ctx, &drover.Message{ID: "m03", Queue: q, Task: "t", Attempt: 1}, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	records := func(from, to int) []drover.Outcome {
		var os []drover.Outcome
		for i := from; i < to; i++ {
			os = append(os, drover.Outcome{ID: fmt.Sprintf("r%02d", i), State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()})
		}
		return os
	}
	for round, upto := range []int{2, 5, 11} {
		var reqs []drover.TrimRequest
		for _, tw := range twins {
			os := records(round*10, round*10+10)
			if _, err := s.Log().TrimRecording(ctx, tw.one, offsets[tw.one][upto], 0, os, policy); err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, drover.TrimRequest{Queue: tw.many, Offset: offsets[tw.many][upto], Outcomes: os, Policy: policy})
		}
		for i, err := range s.Log().TrimMany(ctx, reqs) {
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, reqs[i].Queue, err)
			}
		}
		for _, tw := range twins {
			var sums [2]string
			for k, q := range []string{tw.one, tw.many} {
				qk := s.keys.queue(q)
				log, err := rdb.ZRange(ctx, qk.log, 0, -1).Result()
				if err != nil {
					t.Fatal(err)
				}
				envs, err := rdb.HKeys(ctx, qk.msg).Result()
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(envs)
				n, err := s.Jobs().Outcomes(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				sums[k] = fmt.Sprintf("log %v envelopes %v records %d", log, envs, n)
			}
			if sums[0] != sums[1] {
				t.Fatalf("round %d: TrimRecording left %s; TrimMany left %s", round, sums[0], sums[1])
			}
		}
	}
	// The last round: everything but m03's envelope is gone, and the
	// records are bounded.
	qk := s.keys.queue(twins[0].many)
	if envs, _ := rdb.HKeys(ctx, qk.msg).Result(); len(envs) != 1 || envs[0] != "m03" {
		t.Fatalf("after the last trim: want only the retried m03's envelope, have %v", envs)
	}
	if n, _ := s.Jobs().Outcomes(ctx, twins[0].many); n > int64(policy.MaxRecords()) || n == 0 {
		t.Fatalf("want records kept, at most %d, have %d", policy.MaxRecords(), n)
	}
}

var _ = addContractCases(contractCase{"TrimManyRecordsOnlyLeavesTheLog", testTrimManyRecordsOnlyLeavesTheLog})

// A RecordsOnly request writes its queue's records and removes nothing from
// its log, beside a full trim of another queue in the same call (the
// committer's way of recording a busy queue's outcomes between its trims).
func testTrimManyRecordsOnlyLeavesTheLog(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	policy := drover.Outcomes{Max: 16}
	last := map[string]drover.Position{}
	for _, q := range []string{"ro-kept", "ro-trimmed"} {
		for i := range 3 {
			r, err := s.Producer().Enqueue(ctx, msg(q, fmt.Sprintf("m%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			last[q] = r.Position
		}
	}
	rec := []drover.Outcome{{ID: "m0", State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()}}
	reqs := []drover.TrimRequest{
		{Queue: "ro-kept", Offset: last["ro-kept"], Outcomes: rec, Policy: policy, RecordsOnly: true},
		{Queue: "ro-trimmed", Offset: last["ro-trimmed"], Outcomes: rec, Policy: policy},
	}
	for i, err := range s.Log().TrimMany(ctx, reqs) {
		if err != nil {
			t.Fatalf("%s: %v", reqs[i].Queue, err)
		}
	}
	for q, want := range map[string]int64{"ro-kept": 3, "ro-trimmed": 0} {
		qk := s.keys.queue(q)
		if n, err := rdb.ZCard(ctx, qk.log).Result(); err != nil || n != want {
			t.Fatalf("%s: want %d log entries, have %d (%v)", q, want, n, err)
		}
		if n, err := rdb.HLen(ctx, qk.msg).Result(); err != nil || n != want {
			t.Fatalf("%s: want %d envelopes, have %d (%v)", q, want, n, err)
		}
		if n, err := s.Jobs().Outcomes(ctx, q); err != nil || n != 1 {
			t.Fatalf("%s: want its one record kept, have %d, %v", q, n, err)
		}
	}
	// The same request twice in one call (the second one runs alone).
	dup := []drover.TrimRequest{reqs[0], reqs[0]}
	dup[1].Outcomes = []drover.Outcome{{ID: "m1", State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()}}
	for i, err := range s.Log().TrimMany(ctx, dup) {
		if err != nil {
			t.Fatalf("repeated request %d: %v", i, err)
		}
	}
	if n, err := rdb.ZCard(ctx, s.keys.queue("ro-kept").log).Result(); err != nil || n != 3 {
		t.Fatalf("ro-kept after a repeated records-only request: want 3 entries, have %d (%v)", n, err)
	}
	if n, err := s.Jobs().Outcomes(ctx, "ro-kept"); err != nil || n != 2 {
		t.Fatalf("ro-kept: want 2 records (m0 again is the same field, and m1), have %d, %v", n, err)
	}
}

var _ = addContractCases(contractCase{"TrimManyRecordsReadBackAsWritten", testTrimManyRecordsReadBackAsWritten})

// TrimMany sends a record's id and JSON as pointers into the requests (no
// allocation per argument): every record of several queues and of a
// repeated request (written on its own) reads back as written.
func testTrimManyRecordsReadBackAsWritten(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	finished := time.Date(2026, 11, 24, 9, 30, 0, 123456789, time.UTC)
	rec := func(q string, i int) drover.Outcome {
		return drover.Outcome{ID: fmt.Sprintf("%s-j%d", q, i), State: drover.JobSucceeded, Task: "t." + q, Attempt: i % 3,
			ExitCode: 0, FinishedAt: finished.Add(time.Duration(i) * time.Millisecond), Duration: float64(i) / 4,
			Member: "w-" + q, StdoutTail: fmt.Sprintf("out %d\n", i)}
	}
	var reqs []drover.TrimRequest
	for _, q := range []string{"rb-a", "rb-b", "rb-a"} { // rb-a twice: its second request runs alone
		var os []drover.Outcome
		for i := range 5 {
			os = append(os, rec(q, i+5*len(reqs)))
		}
		reqs = append(reqs, drover.TrimRequest{Queue: q, Outcomes: os, RecordsOnly: true})
	}
	for i, err := range s.Log().TrimMany(ctx, reqs) {
		if err != nil {
			t.Fatalf("%s: %v", reqs[i].Queue, err)
		}
	}
	for _, r := range reqs {
		for _, o := range r.Outcomes {
			st := jobStatus(t, s, r.Queue, o.ID, 0)
			if st.State != drover.JobSucceeded || st.Task != o.Task || st.Attempt != o.Attempt || st.Member != o.Member ||
				st.Duration != o.Duration || st.StdoutTail != o.StdoutTail || st.FinishedAt == nil || !st.FinishedAt.Equal(o.FinishedAt) {
				t.Fatalf("%s %s: want the record %+v, have %+v", r.Queue, o.ID, o, st)
			}
		}
	}
}

var _ = addContractCases(contractCase{"TrimManySendsManyRecordsInSeveralCalls", testTrimManySendsManyRecordsInSeveralCalls})

// A queue with more than recordsPerCall records gets them in records-only
// calls of their own ahead of its trim's: every record is kept, none twice,
// and the trim still removes what the offset covers; a queue beside it in
// the same TrimMany is trimmed and recorded as usual.
func testTrimManySendsManyRecordsInSeveralCalls(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	policy := drover.Outcomes{Max: 100000} // one bucket holds them all
	last := map[string]drover.Position{}
	for _, q := range []string{"many-recs", "few-recs"} {
		for i := range 3 {
			r, err := s.Producer().Enqueue(ctx, msg(q, fmt.Sprintf("m%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			last[q] = r.Position
		}
	}
	n := 2*recordsPerCall + recordsPerCall/2
	var many []drover.Outcome
	for i := range n {
		many = append(many, drover.Outcome{ID: fmt.Sprintf("r%05d", i), State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()})
	}
	reqs := []drover.TrimRequest{
		{Queue: "many-recs", Offset: last["many-recs"], Outcomes: many, Policy: policy},
		{Queue: "few-recs", Offset: last["few-recs"], Outcomes: many[:2], Policy: policy},
	}
	for i, err := range s.Log().TrimMany(ctx, reqs) {
		if err != nil {
			t.Fatalf("%s: %v", reqs[i].Queue, err)
		}
	}
	for q, want := range map[string]int64{"many-recs": int64(n), "few-recs": 2} {
		if got, err := s.Jobs().Outcomes(ctx, q); err != nil || got != want {
			t.Fatalf("%s: want %d records, have %d, %v", q, want, got, err)
		}
		if got, err := rdb.ZCard(ctx, s.keys.queue(q).log).Result(); err != nil || got != 0 {
			t.Fatalf("%s: want its log trimmed to the offset, have %d entries (%v)", q, got, err)
		}
	}
	for _, i := range []int{0, recordsPerCall - 1, recordsPerCall, 2 * recordsPerCall, n - 1} { // each call's first and last
		if st := jobStatus(t, s, "many-recs", many[i].ID, last["many-recs"]); st.State != drover.JobSucceeded || st.Task != "t" {
			t.Fatalf("%s: want its record, have %+v", many[i].ID, st)
		}
	}
}

var _ = addContractCases(contractCase{"TrimManyStagesWholeBuckets", testTrimManyStagesWholeBuckets})

// Records that fill whole buckets go staged (a plain HSET each) and
// trim-many adopts them as new buckets by RENAME: every record is kept and
// readable, each adopted bucket is in the index with its expiry, no
// staging key is left, the rest goes as arguments into the bucket after
// them, and the bound still holds once more buckets' worth come.
func testTrimManyStagesWholeBuckets(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	policy := drover.Outcomes{Max: 8 * minStaged} // per = minStaged: buckets are staged
	per := bucketRecords(policy)
	q := "staged"
	var last drover.Position
	for i := range 3 {
		r, err := s.Producer().Enqueue(ctx, msg(q, fmt.Sprintf("m%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		last = r.Position
	}
	mk := func(from, n int) []drover.Outcome {
		var os []drover.Outcome
		for i := from; i < from+n; i++ {
			os = append(os, drover.Outcome{ID: fmt.Sprintf("s%05d", i), State: drover.JobSucceeded, Task: "t", FinishedAt: time.Now()})
		}
		return os
	}
	first := mk(0, 2*per+per/2) // two buckets staged, half a bucket as arguments
	// What stageRecords writes for it: two keys of a bucket each, expiring.
	tokens := s.stageRecords(ctx, []drover.TrimRequest{{Queue: "staged-alone", Outcomes: first, Policy: policy}})
	if len(tokens) != 1 || len(tokens[0]) != 2 {
		t.Fatalf("want 2 buckets staged, have %v", tokens)
	}
	for _, tok := range tokens[0] {
		key := s.keys.queue("staged-alone").done + ":staged:" + tok
		n, err := rdb.HLen(ctx, key).Result()
		ttl, err2 := rdb.PTTL(ctx, key).Result()
		if err != nil || err2 != nil || n != int64(per) || ttl <= 0 || ttl > stagedTTL {
			t.Fatalf("staged %s: want %d records expiring within %v, have %d, %v (%v, %v)", key, per, stagedTTL, n, ttl, err, err2)
		}
	}
	for i, err := range s.Log().TrimMany(ctx, []drover.TrimRequest{{Queue: q, Offset: last, Outcomes: first, Policy: policy}}) {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	qk := s.keys.queue(q)
	if n, err := s.Jobs().Outcomes(ctx, q); err != nil || n != int64(len(first)) {
		t.Fatalf("want %d records, have %d, %v", len(first), n, err)
	}
	buckets, err := rdb.ZRangeWithScores(ctx, qk.done, 0, -1).Result()
	if err != nil || len(buckets) != 3 {
		t.Fatalf("want 2 adopted buckets and the current one in the index, have %v (%v)", buckets, err)
	}
	for k, b := range buckets {
		key := qk.done + ":" + b.Member.(string)
		n, err := rdb.HLen(ctx, key).Result()
		if want := []int64{int64(per), int64(per), int64(per / 2)}[k]; err != nil || n != want {
			t.Fatalf("bucket %d (%s): want %d records, have %d (%v)", k, key, want, n, err)
		}
		if at, err := rdb.PExpireTime(ctx, key).Result(); err != nil || at.Milliseconds() != int64(b.Score) {
			t.Fatalf("bucket %s: want it to expire at its index score %v, have %v (%v)", key, b.Score, at, err)
		}
	}
	for _, i := range []int{0, per - 1, per, 2*per - 1, 2 * per, len(first) - 1} {
		if st := jobStatus(t, s, q, first[i].ID, last); st.State != drover.JobSucceeded || st.Task != "t" {
			t.Fatalf("%s: want its record, have %+v", first[i].ID, st)
		}
	}
	if n, err := rdb.ZCard(ctx, qk.log).Result(); err != nil || n != 0 {
		t.Fatalf("want the log trimmed, have %d entries (%v)", n, err)
	}
	// No staging key is left (on a Cluster every master is asked, at once).
	var mu sync.Mutex
	var left []string
	scan := func(ctx context.Context, c *redis.Client) error {
		keys, err := c.Keys(ctx, qk.done+":staged:*").Result()
		mu.Lock()
		left = append(left, keys...)
		mu.Unlock()
		return err
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, scan)
	} else {
		err = scan(ctx, rdb.(*redis.Client))
	}
	if err != nil || len(left) != 0 {
		t.Fatalf("want no staging key left, have %v (%v)", left, err)
	}
	// Eight more buckets' worth: the bound (8 buckets) holds.
	more := mk(len(first), 8*per)
	for i, err := range s.Log().TrimMany(ctx, []drover.TrimRequest{{Queue: q, Offset: last, Outcomes: more, Policy: policy, RecordsOnly: true}}) {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if n, err := s.Jobs().Outcomes(ctx, q); err != nil || n > int64(policy.MaxRecords()) || n < int64(policy.MaxRecords()-per) {
		t.Fatalf("want between %d and %d records kept, have %d, %v", policy.MaxRecords()-per, policy.MaxRecords(), n, err)
	}
	if st := jobStatus(t, s, q, more[len(more)-1].ID, last); st.State != drover.JobSucceeded {
		t.Fatalf("the newest record: want it kept, have %+v", st)
	}
}

// A commit flush stages only when a queue of it has a whole bucket of
// records: the usual flush (a few records a queue) skips staging whole,
// with no key names built and no round trip.
func TestAFlushStagesOnlyWithAWholeBucket(t *testing.T) {
	keep := drover.Duration(time.Hour)
	policy := drover.Outcomes{Max: 8 * minStaged, Retention: &keep}
	few := []drover.Outcome{{ID: "a"}, {ID: "b"}}
	whole := make([]drover.Outcome, bucketRecords(policy))
	zero := drover.Duration(0)
	for _, c := range []struct {
		name string
		reqs []drover.TrimRequest
		want bool
	}{
		{"nothing", nil, false},
		{"a few records a queue", []drover.TrimRequest{{Queue: "a", Outcomes: few, Policy: policy}, {Queue: "b", Outcomes: few, Policy: policy}}, false},
		{"a whole bucket behind a few", []drover.TrimRequest{{Queue: "a", Outcomes: few, Policy: policy}, {Queue: "b", Outcomes: whole, Policy: policy}}, true},
		{"a whole bucket of a small bound", []drover.TrimRequest{{Queue: "a", Outcomes: whole, Policy: drover.Outcomes{Max: 8, Retention: &keep}}}, false},
		{"a whole bucket kept for no time", []drover.TrimRequest{{Queue: "a", Outcomes: whole, Policy: drover.Outcomes{Max: 8 * minStaged, Retention: &zero}}}, false},
	} {
		if have := anyStaged(c.reqs); have != c.want {
			t.Errorf("%s: want %v, have %v", c.name, c.want, have)
		}
	}
}
