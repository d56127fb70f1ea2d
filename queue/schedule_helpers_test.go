package queue_test

import (
	"context"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/scheduler"
	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"
)

// schedEnv is one test's Redis, queue store and schedule store, under a
// fresh key prefix.
type schedEnv struct {
	rdb    redis.UniversalClient
	prefix string
	queue  *queue.Store
	sched  *queue.ScheduleStore
}

func newSchedEnv(tb testing.TB, rdb redis.UniversalClient) *schedEnv {
	tb.Helper()
	prefix := testenv.Prefix(tb)
	qs, err := queue.New(queue.Config{Client: rdb, Prefix: prefix})
	if err != nil {
		tb.Fatalf("queue.New: %v", err)
	}
	return &schedEnv{rdb: rdb, prefix: prefix, queue: qs, sched: qs.Schedules()}
}

func schedStandalone(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(tb).Addr})
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

func schedCluster(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testenv.RedisCluster(tb).Addrs})
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// Put writes an entry with raw Redis commands, exactly as docs/scheduler.md
// tells programs in other languages to: HSET the definition, then ZADD.
func (e *schedEnv) Put(name string, definition []byte, score float64) {
	ctx := context.Background()
	if definition != nil {
		if err := e.rdb.Do(ctx, "HSET", e.prefix+":sched:"+name, "definition", string(definition)).Err(); err != nil {
			panic(err)
		}
	}
	s := strconv.FormatFloat(score, 'f', -1, 64)
	if math.IsInf(score, 1) {
		s = "+inf"
	}
	if err := e.rdb.Do(ctx, "ZADD", e.prefix+":schedule", s, name).Err(); err != nil {
		panic(err)
	}
}

// enqueuer adapts the queue store to scheduler.Enqueuer, counting accepted
// (non-duplicate) enqueues per id.
type countingEnqueuer struct {
	store    *queue.Store
	mu       sync.Mutex
	accepted map[string]int
	dups     int                     // enqueues the queue refused as duplicates
	onAccept func(m *drover.Message) // optional, called outside the lock
}

func newEnqueuer(qs *queue.Store) *countingEnqueuer {
	return &countingEnqueuer{store: qs, accepted: make(map[string]int)}
}

func (c *countingEnqueuer) Enqueue(ctx context.Context, m *drover.Message) (bool, error) {
	res, err := c.store.Producer().Enqueue(ctx, m)
	if err != nil {
		return false, err
	}
	if res.Duplicate {
		c.mu.Lock()
		c.dups++
		c.mu.Unlock()
		return true, nil
	}
	c.mu.Lock()
	c.accepted[m.ID]++
	c.mu.Unlock()
	if c.onAccept != nil {
		c.onAccept(m)
	}
	return false, nil
}

func (c *countingEnqueuer) acceptedIDs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.accepted))
	for k, v := range c.accepted {
		out[k] = v
	}
	return out
}

func newLoop(tb testing.TB, st scheduler.Store, enq scheduler.Enqueuer, clock drover.Clock, cfg scheduler.Config) *scheduler.Scheduler {
	tb.Helper()
	cfg.Store, cfg.Enqueuer, cfg.Clock = st, enq, clock
	if cfg.Leadership == nil {
		cfg.Leadership = scheduler.SoleLeader{}
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		tb.Fatalf("scheduler.New: %v", err)
	}
	return s
}

// newSetClock returns the shared settable clock.
func newSetClock(t time.Time) *testkit.Clock { return testkit.NewClock(t) }

// readQueue returns every message in the queue's log.
func readQueue(tb testing.TB, qs *queue.Store, name string) []*drover.Message {
	tb.Helper()
	var out []*drover.Message
	var after drover.Position
	for {
		entries, err := qs.Log().ReadAfter(context.Background(), name, after, queue.MaxReadBatch)
		if err != nil {
			tb.Fatalf("read %s: %v", name, err)
		}
		if len(entries) == 0 {
			return out
		}
		for _, e := range entries {
			m, err := drover.DecodeMessage(e.Raw)
			if err != nil {
				tb.Fatalf("decode %s: %v", e.ID, err)
			}
			out = append(out, m)
			after = e.Position
		}
	}
}
