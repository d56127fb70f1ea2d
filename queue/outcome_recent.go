package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// recentBuckets is how many of the newest outcome buckets RecentOutcomes
// reads: the current one and the one before it (each holds at most 1/8 of
// the queue's bound, drover.Outcomes.MaxRecords).
const recentBuckets = 2

// RecentOutcomes returns up to limit of queue's newest outcome records
// (succeeded and revoked jobs: docs/redis-schema.md, "Outcome records"),
// newest first, from its two newest buckets: two round trips whatever the
// queue's size. A record that cannot be decoded is left out. Failed jobs
// are not here: they are dead letters, or delayed retries that carry their
// last error.
func (s Jobs) RecentOutcomes(ctx context.Context, queue string, limit int) ([]drover.Outcome, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return nil, fmt.Errorf("recent outcomes: %w", err)
	}
	buckets, err := s.rdb.ZRevRange(ctx, qk.done, 0, recentBuckets-1).Result()
	if err != nil {
		return nil, fmt.Errorf("recent outcomes of %s: %w", queue, err)
	}
	out := []drover.Outcome{}
	if len(buckets) == 0 {
		return out, nil
	}
	pipe := s.rdb.Pipeline()
	for _, b := range buckets {
		pipe.HGetAll(ctx, qk.done+":"+b)
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil && !errNil(err) {
		return nil, fmt.Errorf("recent outcomes of %s: %w", queue, err)
	}
	for _, c := range cmds {
		m, _ := c.(interface{ Val() map[string]string })
		if m == nil {
			continue
		}
		for id, rec := range m.Val() {
			var o drover.Outcome
			if json.Unmarshal([]byte(rec), &o) != nil {
				continue
			}
			o.ID = id
			if o.State == "" {
				o.State = drover.JobSucceeded
			}
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].FinishedAt.Equal(out[j].FinishedAt) {
			return out[i].FinishedAt.After(out[j].FinishedAt)
		}
		return out[i].ID < out[j].ID
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Outcomes returns how many outcome records queue keeps now.
func (s Jobs) Outcomes(ctx context.Context, queue string) (int64, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, fmt.Errorf("count outcome records: %w", err)
	}
	buckets, err := s.rdb.ZRange(ctx, qk.done, 0, -1).Result()
	if err != nil {
		return 0, fmt.Errorf("count outcome records of %s: %w", queue, err)
	}
	// A bucket's fields are its records and, once its owner wrote to it by
	// its note, the marker "" (recordFunction): not a record. One round
	// trip for every bucket.
	pipe := s.rdb.Pipeline()
	sizes := make([]*redis.IntCmd, len(buckets))
	marked := make([]*redis.BoolCmd, len(buckets))
	for i, b := range buckets {
		sizes[i] = pipe.HLen(ctx, qk.done+":"+b)
		marked[i] = pipe.HExists(ctx, qk.done+":"+b, "")
	}
	if len(buckets) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, fmt.Errorf("count outcome records of %s: %w", queue, err)
		}
	}
	var n int64
	for i := range buckets {
		n += sizes[i].Val()
		if marked[i].Val() {
			n--
		}
	}
	return n, nil
}
