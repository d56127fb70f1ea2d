package queue

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// commandCalls returns the calls per command since the last CONFIG
// RESETSTAT (INFO commandstats, which counts the commands scripts call),
// without INFO's and CONFIG's own.
func commandCalls(t *testing.T, rdb redis.UniversalClient) map[string]int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.Atoi(calls)
		have[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	delete(have, "info")
	delete(have, "config|resetstat")
	return have
}

// The trim of a lone started message deletes its envelope and its
// recorded starts in one HDEL (they share :msg), and touches :seen only
// when asked (TrimRequest.SweepSeen): then it forgets the expired ids and
// keeps those inside their window, which an enqueue still refuses. On the
// old layout the trim paid a second HDEL (:attempts) and a ZRANGE of :seen
// every time (issue 43). It learns that it emptied the log from a ZCARD,
// not from positions read with the ids (each one a '%.17g' in Redis and a
// parse in Lua): the queue still enters the retire index.
func TestALoneTrimCostsOneHDELAndSweepsOnlyWhenAsked(t *testing.T) {
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, func(c *Config) { c.DedupeWindow = time.Hour })
	ctx := context.Background()
	qk := s.keys.queue("q")
	mustEnqueue(t, s, msg("q", "live")) // keyed: in :seen for the hour
	now := time.Now().UnixMilli()
	if err := rdb.ZAdd(ctx, qk.seen, redis.Z{Score: float64(now - 1000), Member: "expired"}).Err(); err != nil {
		t.Fatal(err)
	}
	trim := func(sweep bool) map[string]int {
		t.Helper()
		r := mustEnqueue(t, s, msg("q", ""))
		if _, err := s.Log().RecordStarts(ctx, []string{"q"}, []string{r.ID}); err != nil {
			t.Fatal(err)
		}
		if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for _, err := range s.Log().TrimMany(ctx, []drover.TrimRequest{{Queue: "q", Offset: r.Position, SweepSeen: sweep}}) {
			if err != nil {
				t.Fatal(err)
			}
		}
		calls := commandCalls(t, rdb)
		if n, err := rdb.HLen(ctx, qk.msg).Result(); err != nil || n != 0 {
			t.Fatalf("want :msg empty after the trim (envelopes and starts gone), have %d fields (err %v)", n, err)
		}
		return calls
	}
	trim(false) // the first trim-many call loads the script
	calls := trim(false)
	if calls["hdel"] != 1 || calls["zrange"] != 1 || calls["zcard"] != 2 {
		t.Fatalf("a lone trim without the sweep: want 1 HDEL, 1 ZRANGE (the log's ids) and 2 ZCARDs (the log, :delayed), have %v", calls)
	}
	if err := rdb.ZScore(ctx, s.keys.retireIndex(), "q").Err(); err != nil {
		t.Fatalf("the emptied queue in the retire index: %v", err)
	}
	if n, _ := rdb.ZCard(ctx, qk.seen).Result(); n != 2 {
		t.Fatalf("without the sweep: want :seen untouched (2 ids), have %d", n)
	}
	calls = trim(true)
	if calls["hdel"] != 1 || calls["zrange"] != 2 {
		t.Fatalf("a lone trim with the sweep: want 1 HDEL and 2 ZRANGEs (the log, :seen), have %v", calls)
	}
	ids, err := rdb.ZRange(ctx, qk.seen, 0, -1).Result()
	if err != nil || len(ids) != 1 || ids[0] != "live" {
		t.Fatalf("after the sweep: want only the id inside its window, have %v (err %v)", ids, err)
	}
	if r := mustEnqueue(t, s, msg("q", "live")); !r.Duplicate {
		t.Fatal("an id inside its dedupe window after sweeps: want a duplicate, have it enqueued")
	}
}

// The trim hands Redis its bound as decimal digits ('%d' in Lua), which C
// leaves undefined for 2^63 and more: a bound past every position (as large
// as a Position holds) still trims the whole log and notes it emptied, and
// a bound below every position trims nothing, through both scripts.
func TestATrimBoundPastEveryPositionTrimsAll(t *testing.T) {
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	fill := func(q string) drover.Position {
		t.Helper()
		var last drover.Position
		for range 3 {
			last = mustEnqueue(t, s, msg(q, "")).Position
		}
		return last
	}
	card := func(q string) int64 {
		t.Helper()
		n, err := rdb.ZCard(ctx, s.keys.queue(q).log).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	fill("low")
	for _, err := range s.Log().TrimMany(ctx, []drover.TrimRequest{{Queue: "low", Offset: 0}}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := card("low"); n != 3 {
		t.Fatalf("a bound below every position: want the log kept (3 entries), have %d", n)
	}
	fill("high")
	for _, err := range s.Log().TrimMany(ctx, []drover.TrimRequest{{Queue: "high", Offset: drover.Position(math.MaxInt64)}}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := card("high"); n != 0 {
		t.Fatalf("trim-many to the largest bound: want the log empty, have %d entries", n)
	}
	if err := rdb.ZScore(ctx, s.keys.retireIndex(), "high").Err(); err != nil {
		t.Fatalf("the emptied queue in the retire index: %v", err)
	}
	fill("one")
	if _, err := s.Log().Trim(ctx, "one", drover.Position(math.MaxInt64), 0); err != nil {
		t.Fatal(err)
	}
	if n := card("one"); n != 0 {
		t.Fatalf("trim to the largest bound: want the log empty, have %d entries", n)
	}
}
