package queue

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// redisClockTTL is how long one reading of Redis's TIME serves as the base
// of the producer's estimate of Redis's clock. The local clock drifts from
// Redis's by parts per million, so the estimate stays within a round trip
// and some µs of Redis's clock; the estimate is a hint, and the enqueue
// script keeps positions strictly increasing whatever it says.
const redisClockTTL = 5 * time.Second

// redisClock estimates Redis's clock (TIME, in µs since the epoch) from the
// last reading and the local clock's time since, so that the lone enqueue
// script need not call TIME (enqueueOneSource). It is safe for concurrent
// use; at most one caller at a time reads TIME, the others use the reading
// they have, or none.
type redisClock struct {
	clock   drover.Clock
	reading atomic.Pointer[clockReading] // nil: none yet
	busy    atomic.Bool                  // a caller is reading TIME
}

// timeReader is the part of the Redis client redisClock uses.
type timeReader interface {
	Time(ctx context.Context) *redis.TimeCmd
}

// clockReading is Redis's clock in µs no later than the local time at (the
// end of the TIME round trip).
type clockReading struct {
	at time.Time
	us int64
}

// peek returns the estimate of Redis's clock in µs without waiting: from a
// reading younger than redisClockTTL, else 0 ("no estimate"), and then it
// reads TIME again in the background (one reading at a time, bounded by
// redisClockTTL) for the next caller. The committer's record path uses it
// (Log.TrimMany): a round trip there would delay the member's next offset
// commit, and the commits must not wait on Redis (docs/reliability.md).
func (c *redisClock) peek(rdb timeReader) int64 {
	if r := c.reading.Load(); r != nil {
		if age := c.clock.Now().Sub(r.at); age >= 0 && age < redisClockTTL {
			return r.us + age.Microseconds()
		}
	}
	if !c.busy.Load() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), redisClockTTL)
			defer cancel()
			c.now(ctx, rdb)
		}()
	}
	return 0
}

// now returns the estimate of Redis's clock in µs, reading TIME first when
// the last reading is older than redisClockTTL. While another caller reads
// TIME it uses the older reading. It returns 0, "no estimate", when there
// is no usable reading (none yet, TIME failed, or the local clock is before
// the reading's): the script then reads TIME itself. It blocks for one
// round trip when it reads TIME.
func (c *redisClock) now(ctx context.Context, rdb timeReader) int64 {
	r := c.reading.Load()
	var age time.Duration
	if r != nil {
		age = c.clock.Now().Sub(r.at)
		if age >= 0 && age < redisClockTTL {
			return r.us + age.Microseconds()
		}
	}
	if !c.busy.CompareAndSwap(false, true) {
		if r != nil && age >= 0 {
			return r.us + age.Microseconds() // being read again: still close
		}
		return 0
	}
	defer c.busy.Store(false)
	t, err := rdb.Time(ctx).Result()
	if err != nil {
		return 0
	}
	// Redis read its clock somewhere between sent and received: taking
	// received as the reading's local time makes the estimate never run
	// ahead of Redis's clock (it lags by up to the round trip). Halfway
	// ran ahead by half a skewed round trip on a loaded machine (a request
	// that waited to be written): positions then lay in Redis's future, and
	// a backlog measured at once gave a negative oldest age.
	received := c.clock.Now()
	us := t.UnixMicro()
	c.reading.Store(&clockReading{at: received, us: us})
	return us
}
