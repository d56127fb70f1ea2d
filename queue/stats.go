package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// StatsBatch is how many queues one Stats pipeline carries: 10,000 queues
// are read in 10 round trips (plus one for the server's clock).
const StatsBatch = 1000

// QueueStats is one queue's backlog after an offset and its log end.
type QueueStats struct {
	Backlog
	// LogEnd is the highest position in the log; 0 when the log is empty.
	LogEnd drover.Position
}

// Stats measures many queues at once, each after its own offset: offsets[i]
// is queues[i]'s committed position. It sends plain read commands (ZCOUNT,
// ZRANGE … LIMIT 0 1, ZCARD; no script), pipelined StatsBatch queues per
// round trip, so a console refresh at 10,000 queues costs 11 round trips and
// work in Redis that does not grow with the backlogs. Unknown queues read as
// empty. It fails on the first command that fails.
func (s Inspector) Stats(ctx context.Context, queues []string, offsets []drover.Position) ([]QueueStats, error) {
	if len(offsets) != len(queues) {
		return nil, fmt.Errorf("queue stats: %d queues, %d offsets", len(queues), len(offsets))
	}
	now, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("queue stats: server time: %w", err)
	}
	out := make([]QueueStats, len(queues))
	type cmds struct {
		lag           *redis.IntCmd
		first, last   *redis.ZSliceCmd
		delayed, dead *redis.IntCmd
	}
	for start := 0; start < len(queues); start += StatsBatch {
		end := min(start+StatsBatch, len(queues))
		batch := make([]cmds, end-start)
		pipe := s.rdb.Pipeline()
		for i := start; i < end; i++ {
			qk, err := s.queueKeys(queues[i])
			if err != nil {
				return nil, fmt.Errorf("queue stats: %w", err)
			}
			after := "(" + formatInt(int64(offsets[i]))
			c := &batch[i-start]
			c.lag = pipe.ZCount(ctx, qk.log, after, "+inf")
			c.first = pipe.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: qk.log, Start: after, Stop: "+inf", ByScore: true, Count: 1})
			c.last = pipe.ZRangeWithScores(ctx, qk.log, -1, -1)
			c.delayed = pipe.ZCard(ctx, qk.delayed)
			c.dead = pipe.ZCard(ctx, qk.dead)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("queue stats: %w", err)
		}
		for i := start; i < end; i++ {
			c := &batch[i-start]
			st := &out[i]
			st.Lag, st.Delayed, st.Dead = c.lag.Val(), c.delayed.Val(), c.dead.Val()
			if f := c.first.Val(); len(f) > 0 {
				st.Oldest = drover.Position(f[0].Score)
				if age := now.Sub(time.UnixMicro(int64(st.Oldest))); age > 0 {
					st.OldestAge = age
				}
			}
			if l := c.last.Val(); len(l) > 0 {
				st.LogEnd = drover.Position(l[0].Score)
			}
		}
	}
	return out, nil
}
