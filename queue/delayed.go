package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-dev/drover"
)

// DefaultPromoteLimit is the most ids PromoteDue moves when given limit <= 0.
const DefaultPromoteLimit = 1000

// PromoteDue moves up to limit ids of queue whose due time is at or before
// now from the delayed set into the log, atomically, with fresh positions
// (after every position handed out so far), in due-time order. An id still in
// the log is moved to its new position. It returns how many ids moved;
// fewer than limit means none is due any more. limit <= 0 means
// DefaultPromoteLimit.
func (s *Store) PromoteDue(ctx context.Context, queue string, now time.Time, limit int) (int, error) {
	n, _, err := s.PromoteDueNext(ctx, queue, now, limit)
	return n, err
}

// PromoteDueNext is PromoteDue that also returns, from the same script call,
// the due time of the earliest message still delayed (zero when none is):
// the owner schedules its next promotion for then instead of polling.
func (s *Store) PromoteDueNext(ctx context.Context, queue string, now time.Time, limit int) (int, time.Time, error) {
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
func (s *Store) NextDue(ctx context.Context, queue string) (time.Time, bool, error) {
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

// Revoke deletes a delayed message of queue, with its envelope and its
// dedupe record (the id may be enqueued again), and returns true; it returns
// false, changing nothing, when the id is unknown or no longer delayed
// (already promoted). It keeps a "revoked" outcome record for the default
// retention (24h); RevokeRecording follows a queue's own policy.
func (s *Store) Revoke(ctx context.Context, queue, id string) (bool, error) {
	return s.RevokeRecording(ctx, queue, id, drover.Outcomes{}, "")
}

// RevokeRecording is Revoke keeping the outcome record as policy says (none
// when policy.Keep() is 0); by names who revoked it, for the record.
func (s *Store) RevokeRecording(ctx context.Context, queue, id string, policy drover.Outcomes, by string) (bool, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return false, fmt.Errorf("revoke %s in %s: %w", id, queue, err)
	}
	n, err := s.run(ctx, revokeScript, []string{qk.log, qk.msg, qk.delayed, qk.seen}, id).Int()
	if err != nil {
		return false, fmt.Errorf("revoke %s in %s: %w", id, queue, err)
	}
	if n == 0 {
		return false, nil
	}
	rec := drover.Outcome{ID: id, State: drover.JobRevoked, ExitCode: -1, FinishedAt: s.clock.Now().UTC(), By: by}
	if err := s.recordOutcomes(ctx, qk, []drover.Outcome{rec}, policy); err != nil {
		return true, fmt.Errorf("revoked %s in %s, but its outcome record was not kept: %w", id, queue, err)
	}
	return true, nil
}

// Retry schedules m (its Attempt already incremented by the caller) to run
// again at due: its envelope replaces the stored one under the same id, the
// id goes to the delayed set and leaves the log. Trim keeps the envelope of
// an id in the delayed set, so committing past m's old position is safe.
// PromoteDue brings it back to the log.
func (s *Store) Retry(ctx context.Context, m *drover.Message, due time.Time) error {
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
	if err := s.run(ctx, retryScript, []string{qk.log, qk.msg, qk.delayed}, m.ID, env, due.UnixMilli()).Err(); err != nil {
		return fmt.Errorf("retry %s in %s: %w", m.ID, m.Queue, err)
	}
	return nil
}
