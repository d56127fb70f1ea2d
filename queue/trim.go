package queue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

// trimChunk is the most log entries one trim script call removes; Trim calls
// it until less than a chunk is left, so no call blocks Redis for long.
const trimChunk = 1000

// Trim removes done messages of queue: log entries at or below offset and
// their envelopes. With a retention window (> 0) only those entries are
// removed that are also older than the window (a position is µs since the
// epoch, compared with Redis's clock), so that a replay can reach them.
// Envelopes of ids waiting in the delayed set (retries) are kept, and an id
// promoted to a higher position is not touched. It also forgets expired ids
// of the dedupe window. It returns how many log entries it removed.
func (s *Store) Trim(ctx context.Context, queue string, offset drover.Position, retention time.Duration) (int, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, fmt.Errorf("trim: %w", err)
	}
	if retention < 0 {
		retention = 0
	}
	keys := []string{qk.log, qk.msg, qk.delayed, qk.seen}
	total := 0
	for {
		n, err := s.run(ctx, trimScript, keys, int64(offset), retention.Microseconds(), trimChunk).Int()
		if err != nil {
			return total, fmt.Errorf("trim %s at %d: %w", queue, offset, err)
		}
		total += n
		if n < trimChunk {
			return total, nil
		}
	}
}

// Backlog describes the work waiting in a queue after an offset
// (drover.Backlog).
type Backlog = drover.Backlog

// Backlog measures queue after offset in one round trip, at a cost that does
// not grow with the backlog.
func (s *Store) Backlog(ctx context.Context, queue string, offset drover.Position) (Backlog, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return Backlog{}, fmt.Errorf("backlog: %w", err)
	}
	vals, err := s.run(ctx, backlogScript, []string{qk.log, qk.delayed, qk.dead}, "("+formatInt(int64(offset))).Int64Slice()
	if err == nil && len(vals) != 5 {
		err = fmt.Errorf("backlog script returned %d values, want 5", len(vals))
	}
	if err != nil {
		return Backlog{}, fmt.Errorf("backlog of %s after %d: %w", queue, offset, err)
	}
	b := Backlog{Lag: vals[0], Oldest: drover.Position(vals[1]), Delayed: vals[3], Dead: vals[4]}
	if b.Oldest > 0 && vals[2] > vals[1] {
		b.OldestAge = time.Duration(vals[2]-vals[1]) * time.Microsecond
	}
	return b, nil
}

// Queues lists every queue ever enqueued to (the registry SET), sorted.
func (s *Store) Queues(ctx context.Context) ([]string, error) {
	qs, err := s.rdb.SMembers(ctx, s.keys.queues()).Result()
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	slices.Sort(qs)
	return qs, nil
}

// FirstPosition returns the lowest position in queue's log, or an error
// wrapping drover.ErrNotFound when the log is empty. The offset that replays
// the whole log is FirstPosition-1.
func (s *Store) FirstPosition(ctx context.Context, queue string) (drover.Position, error) {
	return s.endPosition(ctx, queue, 0, "first")
}

// LastPosition returns the highest position in queue's log, or an error
// wrapping drover.ErrNotFound when the log is empty. Committing it as the
// offset skips everything enqueued so far.
func (s *Store) LastPosition(ctx context.Context, queue string) (drover.Position, error) {
	return s.endPosition(ctx, queue, -1, "last")
}

func (s *Store) endPosition(ctx context.Context, queue string, index int64, which string) (drover.Position, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, fmt.Errorf("%s position: %w", which, err)
	}
	zs, err := s.rdb.ZRangeWithScores(ctx, qk.log, index, index).Result()
	if err != nil {
		return 0, fmt.Errorf("%s position of %s: %w", which, queue, err)
	}
	if len(zs) == 0 {
		return 0, fmt.Errorf("%s position of %s: log is empty: %w", which, queue, drover.ErrNotFound)
	}
	return drover.Position(zs[0].Score), nil
}

// PositionAt returns the last position of queue's log strictly before t, or
// an error wrapping drover.ErrNotFound when no entry is older. Committing it
// as the offset replays everything enqueued at or after t (offsets reset
// --to-datetime); when it is not found, offset 0 does.
func (s *Store) PositionAt(ctx context.Context, queue string, t time.Time) (drover.Position, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, fmt.Errorf("position at %s: %w", t, err)
	}
	zs, err := s.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{
		Key: qk.log, Start: "(" + formatInt(t.UnixMicro()), Stop: "-inf",
		ByScore: true, Rev: true, Count: 1,
	}).Result()
	if err != nil {
		return 0, fmt.Errorf("position of %s at %s: %w", queue, t, err)
	}
	if len(zs) == 0 {
		return 0, fmt.Errorf("position of %s at %s: no older entry: %w", queue, t, drover.ErrNotFound)
	}
	return drover.Position(zs[0].Score), nil
}

// QueueKnown reports whether queue is in the queue registry (has ever been
// enqueued to), in one O(1) round trip.
func (s *Store) QueueKnown(ctx context.Context, queue string) (bool, error) {
	ok, err := s.rdb.SIsMember(ctx, s.keys.queues(), queue).Result()
	if err != nil {
		return false, fmt.Errorf("look up queue %s: %w", queue, err)
	}
	return ok, nil
}
