package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/scheduler"
)

// schedulerResult is the scheduler with many entries.
type schedulerResult struct {
	Entries       int           `json:"entries"`
	Write         time.Duration `json:"write_ns"`          // storing the entries (pipelined HSET + ZADD)
	Plan          time.Duration `json:"plan_ns"`           // ticks until every new entry is planned
	Startup       time.Duration `json:"startup_ns"`        // New + first Tick with nothing due
	StartupAlloc  uint64        `json:"startup_alloc"`     // bytes allocated by New + first Tick
	Due           int           `json:"due"`               // entries made due for the fire test
	Fire          time.Duration `json:"fire_ns"`           // the tick that fires them
	RedisPerEntry float64       `json:"redis_bytes_entry"` // Redis used_memory per entry
	Error         string        `json:"error,omitempty"`
}

// runScheduler stores n interval entries (every hour) as another language
// would (docs/scheduler.md: HSET the definition, ZADD score 0), then runs
// the scheduler's ticks on the real clock against the real queue store.
func runScheduler(ctx context.Context, srv *servers, n, due int) *schedulerResult {
	r := &schedulerResult{Entries: n, Due: due}
	if err := runSchedulerInto(ctx, srv, r); err != nil {
		r.Error = err.Error()
	}
	return r
}

func runSchedulerInto(ctx context.Context, srv *servers, r *schedulerResult) error {
	if err := srv.flushRedis(ctx); err != nil {
		return err
	}
	rdb := srv.redisClient()
	defer rdb.Close()
	qs, err := queue.New(queue.Config{Client: rdb, Prefix: "sb"})
	if err != nil {
		return err
	}
	store := qs.Schedules()
	enq := scheduler.EnqueuerFunc(func(ctx context.Context, m *drover.Message) (bool, error) {
		res, err := qs.Producer().Enqueue(ctx, m)
		return res.Duplicate, err
	})
	newScheduler := func() (*scheduler.Scheduler, error) {
		return scheduler.New(scheduler.Config{Store: store, Enqueuer: enq, Leadership: scheduler.SoleLeader{}})
	}
	before, err := usedMemory(ctx, rdb)
	if err != nil {
		return err
	}

	t := time.Now()
	const def = `{"queue":"sched-bench","task":"t","schedule":{"type":"interval","every":"1h"}}`
	for i := 0; i < r.Entries; i += 1000 {
		pipe := rdb.Pipeline()
		for j := i; j < min(i+1000, r.Entries); j++ {
			name := fmt.Sprintf("e%06d", j)
			pipe.HSet(ctx, "sb:sched:"+name, "definition", def)
			pipe.ZAdd(ctx, "sb:schedule", redis.Z{Score: 0, Member: name})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("write entries: %w", err)
		}
	}
	r.Write = time.Since(t)

	// Plan: the first leader sees n new entries and computes their slots.
	s, err := newScheduler()
	if err != nil {
		return err
	}
	t = time.Now()
	for {
		if _, err := s.Tick(ctx); err != nil {
			return fmt.Errorf("plan tick: %w", err)
		}
		left, err := rdb.ZCount(ctx, "sb:schedule", "-inf", "0").Result()
		if err != nil {
			return err
		}
		if left == 0 {
			break
		}
		if time.Since(t) > 5*time.Minute {
			return fmt.Errorf("%d entries still unplanned after 5m", left)
		}
	}
	r.Plan = time.Since(t)
	after, err := usedMemory(ctx, rdb)
	if err != nil {
		return err
	}
	r.RedisPerEntry = float64(after-before) / float64(r.Entries)

	// Start-up of a new leader with nothing due: O(due), not O(entries).
	// Entries are every hour: make sure none is due within the test.
	if err := rdb.ZRemRangeByScore(ctx, "sb:schedule", "-inf", strconv.FormatInt(time.Now().Add(2*time.Minute).Unix(), 10)).Err(); err != nil {
		return err
	}
	kept, err := rdb.ZCard(ctx, "sb:schedule").Result()
	if err != nil {
		return err
	}
	if kept < int64(r.Entries)*9/10 {
		// Slots fall on the hour: entries due within 2 minutes were removed
		// above; too many gone means the test is near the hour. Re-add them
		// an hour ahead.
		pipe := rdb.Pipeline()
		next := time.Now().Add(time.Hour).Unix()
		for j := 0; j < r.Entries; j++ {
			pipe.ZAddNX(ctx, "sb:schedule", redis.Z{Score: float64(next), Member: fmt.Sprintf("e%06d", j)})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc
	t = time.Now()
	s, err = newScheduler()
	if err != nil {
		return err
	}
	if _, err := s.Tick(ctx); err != nil {
		return fmt.Errorf("start-up tick: %w", err)
	}
	r.Startup = time.Since(t)
	runtime.ReadMemStats(&ms)
	r.StartupAlloc = ms.TotalAlloc - alloc

	// Fire: r.Due entries become due at once.
	pipe := rdb.Pipeline()
	now := float64(time.Now().Truncate(time.Hour).Unix()) // a slot of every entry
	for j := 0; j < r.Due; j++ {
		pipe.ZAdd(ctx, "sb:schedule", redis.Z{Score: now, Member: fmt.Sprintf("e%06d", j)})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	t = time.Now()
	if _, err := s.Tick(ctx); err != nil {
		return fmt.Errorf("fire tick: %w", err)
	}
	r.Fire = time.Since(t)
	b, err := qs.Log().Backlog(ctx, "sched-bench", 0)
	if err != nil {
		return err
	}
	if b.Lag != int64(r.Due) {
		return fmt.Errorf("fire tick: want %d jobs enqueued, have %d", r.Due, b.Lag)
	}
	return nil
}

func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO memory: %w", err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO memory has no used_memory")
}
