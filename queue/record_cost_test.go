package queue

import (
	"context"
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
	rdb, err := NewClient(ClientOptions{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
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
