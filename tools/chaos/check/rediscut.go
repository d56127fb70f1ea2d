package check

import (
	"fmt"
	"slices"
	"time"
)

// checkRedisCuts gathers what the Redis partitions showed: how long a cut
// worker's queues took to move (redis-cut), and whether any queue moved
// while no worker reached Redis (redis-cut-all: a violation).
func (c *checker) checkRedisCuts() {
	for _, f := range c.in.Faults {
		switch f.Kind {
		case RedisCut:
			if f.HandOver > 0 {
				c.r.RedisHandOvers = append(c.r.RedisHandOvers, f.HandOver)
			} else {
				c.r.RedisNoHandOver++
			}
		case RedisCutAll:
			c.r.MovedWithoutRedis += f.Moved
			if f.Moved > 0 {
				c.r.violate(MovedWithoutRedis, "%d queue(s) changed owner during the cut of every worker from Redis at %s (%s)",
					f.Moved, f.Start.Format(time.TimeOnly), f.Note)
			}
		}
	}
}

// handOvers formats RedisHandOvers for the report.
func (r *Report) handOvers() string {
	if len(r.RedisHandOvers) == 0 {
		return fmt.Sprintf("— / %d", r.RedisNoHandOver)
	}
	return fmt.Sprintf("%s / %s / %d", slices.Min(r.RedisHandOvers).Round(time.Millisecond),
		slices.Max(r.RedisHandOvers).Round(time.Millisecond), r.RedisNoHandOver)
}
