package queue

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

var _ = addContractCases(contractCase{"BacklogMany", testBacklogMany})

// BacklogMany answers for each queue what Backlog answers for it alone, in
// the order asked, and an invalid queue name fails only its own result.
func testBacklogMany(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, nil)
	first := mustEnqueue(t, s, msg("bm-a", ""))
	mustEnqueue(t, s, msg("bm-a", ""))
	mustEnqueue(t, s, msg("bm-a", ""))
	if _, err := s.Producer().EnqueueIn(ctx, msg("bm-b", ""), time.Hour); err != nil {
		t.Fatal(err)
	}
	queues := []string{"bm-a", "bm-b", "bad queue", "bm-a", "bm-empty"}
	offsets := []drover.Position{0, 0, 0, first.Position, 0}
	got, errs := s.Log().BacklogMany(ctx, queues, offsets)
	if len(got) != len(queues) || len(errs) != len(queues) {
		t.Fatalf("want %d results, have %d and %d errors", len(queues), len(got), len(errs))
	}
	if errs[2] == nil {
		t.Errorf("an invalid queue name: want an error, have %+v", got[2])
	}
	for i, q := range queues {
		if i == 2 {
			continue
		}
		want, err := s.Log().Backlog(ctx, q, offsets[i])
		if err != nil || errs[i] != nil {
			t.Fatalf("%s after %d: Backlog %v, BacklogMany %v", q, offsets[i], err, errs[i])
		}
		// OldestAge is measured at each call's own time.
		want.OldestAge, got[i].OldestAge = 0, 0
		if got[i] != want {
			t.Errorf("%s after %d: BacklogMany says %+v, Backlog %+v", q, offsets[i], got[i], want)
		}
	}
	if got[0].Lag != 3 || got[1].Delayed != 1 || got[3].Lag != 2 {
		t.Errorf("want lags 3 and 2 and one delayed, have %+v", got)
	}
	if _, errs := s.Log().BacklogMany(ctx, []string{"bm-a"}, nil); errs[0] == nil {
		t.Error("offsets that do not match the queues: want an error")
	}
}

// The backlog gauges of many queues cost one script call and one TIME for
// them all, and per queue with no lag a ZCOUNT and two ZCARDs; a script
// call and a TIME per queue cost a worker whose 50,000 keys each get a
// message every 5 s two Redis commands a message (docs/decisions.md,
// "Issue 43: the backlog gauges in one call").
func TestBacklogOfManyQueuesIsOneScriptCall(t *testing.T) {
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, nil)
	ctx := context.Background()
	const n = 40
	queues, offsets := make([]string, n), make([]drover.Position, n)
	for i := range queues {
		queues[i] = fmt.Sprintf("gauge-%02d", i)
		offsets[i] = mustEnqueue(t, s, msg(queues[i], "")).Position // drained: no lag
	}
	if _, errs := s.Log().BacklogMany(ctx, queues, offsets); errs[0] != nil { // loads the script
		t.Fatal(errs[0])
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, errs := s.Log().BacklogMany(ctx, queues, offsets)
	for i := range got {
		if errs[i] != nil || got[i].Lag != 0 {
			t.Fatalf("%s: want no lag, have %+v, %v", queues[i], got[i], errs[i])
		}
	}
	have := commandCalls(t, rdb)
	want := map[string]int{"evalsha": 1, "time": 1, "zcount": n, "zcard": 2 * n}
	if !maps.Equal(have, want) {
		t.Fatalf("want %v for %d queues, have %v", want, n, have)
	}
}
