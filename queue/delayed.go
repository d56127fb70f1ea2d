package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-dev/drover"
)

// DefaultPromoteLimit is the most ids PromoteDueNext moves when given limit <= 0.
const DefaultPromoteLimit = 1000

// PromoteDueNext moves up to limit ids of queue whose due time is at or
// before now from the delayed set into the log, atomically, with fresh
// positions (after every position handed out so far), in due-time order.
// An id still in the log is moved to its new position. It returns how many
// ids moved (fewer than limit means none is due any more) and, from the
// same script call, the due time of the earliest message still delayed
// (zero when none is): the owner schedules its next promotion for then
// instead of polling. limit <= 0 means DefaultPromoteLimit.
func (s Log) PromoteDueNext(ctx context.Context, queue string, now time.Time, limit int) (int, time.Time, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("promote due messages of %s: %w", queue, err)
	}
	if limit <= 0 {
		limit = DefaultPromoteLimit
	}
	vals, err := s.run(ctx, promoteScript, []string{qk.log, qk.seq, qk.delayed}, now.UnixMilli(), limit).Int64Slice()
	if err == nil && len(vals) != 2 {
		err = fmt.Errorf("promote script returned %d values, want 2", len(vals))
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("promote due messages of %s: %w", queue, err)
	}
	var next time.Time
	if vals[1] > 0 {
		next = time.UnixMilli(vals[1])
	}
	return int(vals[0]), next, nil
}

// NextDue returns the due time of queue's earliest delayed message, and
// false when nothing is delayed.
func (s Inspector) NextDue(ctx context.Context, queue string) (time.Time, bool, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next due time of %s: %w", queue, err)
	}
	zs, err := s.rdb.ZRangeWithScores(ctx, qk.delayed, 0, 0).Result()
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next due time of %s: %w", queue, err)
	}
	if len(zs) == 0 {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(int64(zs[0].Score)), true, nil
}

// Retry schedules m (its Attempt already incremented by the caller) to run
// again at due: its envelope replaces the stored one under the same id, the
// id goes to the delayed set and leaves the log. Trim keeps the envelope of
// an id in the delayed set, so committing past m's old position is safe.
// PromoteDueNext brings it back to the log.
func (s Log) Retry(ctx context.Context, m *drover.Message, due time.Time) error {
	if m == nil {
		return errors.New("retry: nil message")
	}
	qk, err := s.queueKeys(m.Queue)
	if err != nil {
		return fmt.Errorf("retry %s: %w", m.ID, err)
	}
	if m.ID == "" {
		return fmt.Errorf("retry in %s: message has no id", m.Queue)
	}
	c := *m
	c.Position = 0
	env, err := encodeEnvelope(&c)
	if err != nil {
		return fmt.Errorf("retry %s in %s: encode envelope: %w", m.ID, m.Queue, err)
	}
	if err := s.runConfirmed(ctx, retryScript, m.ID, []string{qk.log, qk.msg, qk.delayed}, m.ID, env, due.UnixMilli()); err != nil {
		return fmt.Errorf("retry %s in %s: %w", m.ID, m.Queue, err)
	}
	return nil
}
