package queue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// The queue registry and where a queue's positions are, read without
// changing anything: part of the Inspector role.

// Queues lists every queue enqueued to and not retired since (the
// registry SET), sorted.
func (s Inspector) Queues(ctx context.Context) ([]string, error) {
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
func (s Inspector) FirstPosition(ctx context.Context, queue string) (drover.Position, error) {
	return s.endPosition(ctx, queue, 0, "first")
}

// LastPosition returns the highest position in queue's log, or an error
// wrapping drover.ErrNotFound when the log is empty. Committing it as the
// offset skips everything enqueued so far.
func (s Inspector) LastPosition(ctx context.Context, queue string) (drover.Position, error) {
	return s.endPosition(ctx, queue, -1, "last")
}

func (s Inspector) endPosition(ctx context.Context, queue string, index int64, which string) (drover.Position, error) {
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
func (s Inspector) PositionAt(ctx context.Context, queue string, t time.Time) (drover.Position, error) {
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
func (s Inspector) QueueKnown(ctx context.Context, queue string) (bool, error) {
	ok, err := s.rdb.SIsMember(ctx, s.keys.queues(), queue).Result()
	if err != nil {
		return false, fmt.Errorf("look up queue %s: %w", queue, err)
	}
	return ok, nil
}
