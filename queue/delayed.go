package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-dev/drover"
)

// DefaultPromoteLimit is the most ids PromoteMany moves for a request whose Limit is <= 0.
const DefaultPromoteLimit = 1000

// PromoteMany promotes many queues in one round trip, one script call per
// queue, all in one pipeline (a Cluster client sends each node its own).
// For each request it moves up to Limit ids of Queue whose due time is at
// or before Now from the delayed set into the log, atomically, with fresh
// positions (after every position handed out so far), in due-time order;
// an id still in the log is moved to its new position. Its result says how
// many ids moved (fewer than Limit means none is due any more) and, from
// the same script call, the due time of the earliest message still delayed
// (zero when none is): the owner schedules its next promotion for then
// instead of polling. Limit <= 0 means DefaultPromoteLimit. It is
// how an owner's running queues promote (worker/promote.go): one call a
// queue, each with a connection of the client's pool, queued thousands of
// calls for the pool when thousands of queues ran at once. It returns one
// result per request, in order; an invalid queue name affects only its own.
func (s Log) PromoteMany(ctx context.Context, reqs []drover.PromoteRequest) []drover.PromoteResult {
	out := make([]drover.PromoteResult, len(reqs))
	calls := make([]*scriptCall, 0, len(reqs))
	sent := make([]int, 0, len(reqs)) // the request of each call
	for i, r := range reqs {
		qk, err := s.queueKeys(r.Queue)
		if err != nil {
			out[i].Err = fmt.Errorf("promote due messages of %s: %w", r.Queue, err)
			continue
		}
		limit := r.Limit
		if limit <= 0 {
			limit = DefaultPromoteLimit
		}
		calls = append(calls, &scriptCall{keys: []string{qk.log, qk.seq, qk.delayed}, args: []any{r.Now.UnixMilli(), limit}})
		sent = append(sent, i)
	}
	s.evalPipelined(ctx, promoteScript, calls)
	for k, c := range calls {
		i := sent[k]
		vals, err := c.cmd.Int64Slice()
		if err == nil && len(vals) != 2 {
			err = fmt.Errorf("promote script returned %d values, want 2", len(vals))
		}
		if err != nil {
			out[i].Err = fmt.Errorf("promote due messages of %s: %w", reqs[i].Queue, err)
			continue
		}
		out[i].Moved = int(vals[0])
		if vals[1] > 0 {
			out[i].Next = time.UnixMilli(vals[1])
		}
	}
	return out
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
// PromoteMany brings it back to the log.
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
