package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/drover-dev/drover"
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
func (s Log) Trim(ctx context.Context, queue string, offset drover.Position, retention time.Duration) (int, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, fmt.Errorf("trim: %w", err)
	}
	if retention < 0 {
		retention = 0
	}
	keys := s.withRetireIndex([]string{qk.log, qk.msg, qk.delayed, qk.seen})
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
func (s Log) Backlog(ctx context.Context, queue string, offset drover.Position) (Backlog, error) {
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
