package queue

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// setClock is a drover.Clock the test sets.
type setClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *setClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *setClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// tickClock moves 1 ms each time it is read.
type tickClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *tickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Millisecond)
	return c.now
}

// skip moves the clock on by d at once.
func (c *tickClock) skip(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A queue's first message is placed at Redis's TIME (there is no last
// position to bound the producer's estimate by), read after the
// producer's clock reading when that message's call was the producer's
// first: the estimate, which lags Redis's clock by up to that reading's
// round trip, can lie behind the first position for as long, and a lone
// enqueue in that time costs a second SET (last + 1). The tests that count
// a lone enqueue's commands move their clock past it (CI, under load: a
// second SET for 6 of 20 enqueues).
const pastFirstPosition = time.Second

// fakeTime answers TIME with redisNow, or err, and counts the calls.
type fakeTime struct {
	redisNow time.Time
	err      error
	calls    int
}

func (f *fakeTime) Time(ctx context.Context) *redis.TimeCmd {
	f.calls++
	cmd := redis.NewTimeCmd(ctx, "time")
	if f.err != nil {
		cmd.SetErr(f.err)
	} else {
		cmd.SetVal(f.redisNow)
	}
	return cmd
}

// The estimate of Redis's clock is one TIME reading plus the local time
// since; it is read again once it is redisClockTTL old, and is 0 ("no
// estimate", the script reads TIME) when TIME fails or the local clock is
// before the reading.
func TestRedisClockEstimate(t *testing.T) {
	ctx := context.Background()
	local := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	redisAt := local.Add(-3 * time.Second) // Redis's clock is 3 s behind ours
	clk := &setClock{now: local}
	rt := &fakeTime{redisNow: redisAt}
	c := redisClock{clock: clk}

	if have, want := c.now(ctx, rt), redisAt.UnixMicro(); have != want || rt.calls != 1 {
		t.Fatalf("first estimate: want %d after one TIME, have %d after %d", want, have, rt.calls)
	}
	clk.set(local.Add(1500 * time.Millisecond))
	if have, want := c.now(ctx, rt), redisAt.Add(1500*time.Millisecond).UnixMicro(); have != want || rt.calls != 1 {
		t.Fatalf("1.5 s later: want %d with no TIME, have %d after %d TIMEs", want, have, rt.calls)
	}
	rt.redisNow = redisAt.Add(redisClockTTL + time.Second) // Redis's clock moved on faster
	clk.set(local.Add(redisClockTTL))
	if have, want := c.now(ctx, rt), rt.redisNow.UnixMicro(); have != want || rt.calls != 2 {
		t.Fatalf("after the TTL: want the new reading %d, have %d after %d TIMEs", want, have, rt.calls)
	}
	clk.set(local) // before the reading
	rt.err = errors.New("connection refused")
	if have := c.now(ctx, rt); have != 0 || rt.calls != 3 {
		t.Fatalf("local clock before the reading and TIME failing: want 0 after a third TIME, have %d after %d", have, rt.calls)
	}
}

var (
	_ drover.Clock = (*setClock)(nil)
	_ drover.Clock = (*tickClock)(nil)
)

// lateTime is a TIME whose request waited to be written: the local clock
// moves 100 ms during the call and Redis reads its clock at the end of it.
type lateTime struct{ c *setClock }

func (f lateTime) Time(ctx context.Context) *redis.TimeCmd {
	f.c.set(f.c.Now().Add(100 * time.Millisecond))
	cmd := redis.NewTimeCmd(ctx, "time")
	cmd.SetVal(f.c.Now()) // same machine: Redis's clock is the local one
	return cmd
}

// The estimate never runs ahead of Redis's clock, however the round trip
// was split: a position in Redis's future made a backlog measured at once
// report a negative oldest age (TestMetricsOfAWorkerThatRanRealTasks failed
// so in make test at load). Taking the reading halfway through the round
// trip put it 50 ms ahead here.
func TestTheClockEstimateNeverRunsAheadOfRedis(t *testing.T) {
	c := &setClock{now: time.Unix(1_800_000_000, 0)}
	rc := &redisClock{clock: c}
	got := rc.now(context.Background(), lateTime{c})
	if redisNow := c.Now().UnixMicro(); got > redisNow {
		t.Fatalf("estimate %d is %v ahead of Redis's clock %d", got, time.Duration(got-redisNow)*time.Microsecond, redisNow)
	}
	c.set(c.Now().Add(time.Second))
	if got, redisNow := rc.now(context.Background(), lateTime{c}), c.Now().UnixMicro(); got > redisNow {
		t.Fatalf("a second later: estimate %d ahead of Redis's clock %d", got, redisNow)
	}
}

// gatedTime answers TIME with redisNow once the test opens the gate, and
// says on asked that it was asked.
type gatedTime struct {
	redisNow time.Time
	asked    chan struct{}
	gate     chan struct{}
}

func (f *gatedTime) Time(ctx context.Context) *redis.TimeCmd {
	f.asked <- struct{}{}
	<-f.gate
	cmd := redis.NewTimeCmd(ctx, "time")
	cmd.SetVal(f.redisNow)
	return cmd
}

// peek, the committer's reading, never waits for Redis: with no fresh
// reading it answers "no estimate" at once and reads TIME in the
// background, and the next peek uses that reading. A peek that waited
// would block this test at the first call, whose TIME is held until the
// peek has returned.
func TestPeekAnswersAtOnceAndReadsInTheBackground(t *testing.T) {
	local := time.Unix(1_800_000_000, 0)
	clk := &setClock{now: local}
	c := &redisClock{clock: clk}
	f := &gatedTime{redisNow: local.Add(3 * time.Second), asked: make(chan struct{}), gate: make(chan struct{})}
	if us := c.peek(f); us != 0 {
		t.Fatalf("no reading yet: want 0, have %d", us)
	}
	<-f.asked // the background reading began after peek returned
	if us := c.peek(f); us != 0 {
		t.Fatalf("while the reading is under way: want 0, have %d", us)
	}
	close(f.gate)
	for c.reading.Load() == nil || c.busy.Load() {
		runtime.Gosched()
	}
	clk.set(local.Add(time.Second))
	if us, want := c.peek(f), local.Add(4*time.Second).UnixMicro(); us != want {
		t.Fatalf("after the background reading: want %d (its Redis time plus the 1 s since), have %d", want, us)
	}
}
