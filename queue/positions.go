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

// registryPage is how many names one SSCAN of the registry asks for.
const registryPage = 1000

// Queues lists every queue enqueued to and not retired since (the
// registry SET), sorted.
//
// It reads the set in pages (SSCAN), never in one SMEMBERS: at a million
// keys of 200 bytes one reply would be 200 MB, built while Redis serves
// nobody else, and read under a single command's read timeout, which a
// busy host misses (the console's find then answered 503 at 100,000
// names). A name added or removed during the scan may be listed or not;
// every name there for the whole scan is listed once.
func (s Inspector) Queues(ctx context.Context) ([]string, error) {
	var qs []string
	var cursor uint64
	for {
		page, next, err := s.rdb.SScan(ctx, s.keys.queues(), cursor, "", registryPage).Result()
		if err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		qs = append(qs, page...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	slices.Sort(qs)
	return slices.Compact(qs), nil // SSCAN may return a name twice while the set rehashes
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
