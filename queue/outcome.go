package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

// Outcome records (docs/redis-schema.md, "Outcome records") keep what
// happened to a finished job after its message has left the log: :donemsg
// maps the id to a drover.Outcome as JSON, :done maps it to the record's
// expiry (unix ms). Records are written by the queue's owner together with
// the trim that follows each offset commit, so they cost no round trip of
// their own.

// TrimRecording is Trim, preceded by keeping outcome records of jobs that
// finished since the last trim, in the same round trip (one pipeline). The
// records are kept for policy.Keep() (no record when it is 0) and at most
// policy.MaxRecords() are kept per queue, the oldest going first. It returns
// how many log entries the trim removed.
//
// The records are written before the trim, so a lookup that no longer finds
// the message in the log finds its record. A failed call may have written
// the records without trimming; calling it again is safe.
func (s *Store) TrimRecording(ctx context.Context, queue string, offset drover.Position, retention time.Duration, outcomes []drover.Outcome, policy drover.Outcomes) (int, error) {
	keep := policy.Keep()
	if len(outcomes) == 0 || keep <= 0 {
		return s.Trim(ctx, queue, offset, retention)
	}
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, fmt.Errorf("trim: %w", err)
	}
	recArgs := make([]any, 0, 1+3*len(outcomes))
	recArgs = append(recArgs, policy.MaxRecords())
	for i := range outcomes {
		o := &outcomes[i]
		if o.ID == "" {
			return 0, fmt.Errorf("record outcomes of %s: record %d has no id", queue, i)
		}
		b, err := json.Marshal(o)
		if err != nil {
			return 0, fmt.Errorf("record outcome of %s in %s: %w", o.ID, queue, err)
		}
		recArgs = append(recArgs, o.ID, keep.Milliseconds(), b)
	}
	if retention < 0 {
		retention = 0
	}
	trimKeys := []string{qk.log, qk.msg, qk.delayed, qk.seen}
	trimArgs := []any{int64(offset), retention.Microseconds(), trimChunk}
	recKeys := []string{qk.done, qk.donemsg}

	send := func(eval func(sc *redis.Script, pipe redis.Pipeliner, keys []string, args ...any) *redis.Cmd) (*redis.Cmd, *redis.Cmd) {
		pipe := s.rdb.Pipeline()
		rec := eval(recordOutcomesScript, pipe, recKeys, recArgs...)
		trim := eval(trimScript, pipe, trimKeys, trimArgs...)
		_, _ = pipe.Exec(ctx) // errors are read per command
		return rec, trim
	}
	rec, trim := send(func(sc *redis.Script, pipe redis.Pipeliner, keys []string, args ...any) *redis.Cmd {
		return sc.EvalSha(ctx, pipe, keys, args...)
	})
	if isNoScript(rec.Err()) || isNoScript(trim.Err()) {
		// First use, or the server restarted: send the sources.
		rec, trim = send(func(sc *redis.Script, pipe redis.Pipeliner, keys []string, args ...any) *redis.Cmd {
			return sc.Eval(ctx, pipe, keys, args...)
		})
	}
	if err := rec.Err(); err != nil {
		return 0, fmt.Errorf("record %d outcomes of %s: %w", len(outcomes), queue, err)
	}
	n, err := trim.Int()
	if err != nil {
		return 0, fmt.Errorf("trim %s at %d: %w", queue, offset, err)
	}
	if n < trimChunk {
		return n, nil
	}
	more, err := s.Trim(ctx, queue, offset, retention)
	return n + more, err
}

// Outcomes returns how many outcome records queue keeps now (expired ones
// not yet forgotten included).
func (s *Store) Outcomes(ctx context.Context, queue string) (int64, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, fmt.Errorf("count outcome records: %w", err)
	}
	n, err := s.rdb.ZCard(ctx, qk.done).Result()
	if err != nil {
		return 0, fmt.Errorf("count outcome records of %s: %w", queue, err)
	}
	return n, nil
}
