package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/drover-dev/drover"
)

// Outcome records (docs/redis-schema.md, "Outcome records") keep what
// happened to a finished job after its message has left the log, in
// expiring buckets whose expiry is fixed when they are made (see
// recordFunction): a record costs ZRANGE, HLEN and HSET, the bound and the
// expiry are kept when a new bucket is made. Records are written by the
// queue's owner together with the trim that follows each offset commit, so
// they cost no round trip of their own.

// TrimRecording is Trim, preceded by keeping outcome records of jobs that
// finished since the last trim, in the same round trip (one pipeline). The
// records are kept for policy.Keep() (no record when it is 0) and at most
// policy.MaxRecords() are kept per queue, the oldest going first (a lowered
// bound applies within 1/8 of it in new records). It returns
// how many log entries the trim removed.
//
// The records are written before the trim, so a lookup that no longer finds
// the message in the log finds its record. A failed call may have written
// the records without trimming; calling it again is safe.
func (s Log) TrimRecording(ctx context.Context, queue string, offset drover.Position, retention time.Duration, outcomes []drover.Outcome, policy drover.Outcomes) (int, error) {
	keep := policy.Keep()
	if len(outcomes) == 0 || keep <= 0 {
		return s.Trim(ctx, queue, offset, retention)
	}
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, fmt.Errorf("trim: %w", err)
	}
	recArgs, err := appendRecordArgs(append(make([]any, 0, 2+2*len(outcomes)), policy.MaxRecords(), keep.Milliseconds()), queue, outcomes)
	if err != nil {
		return 0, err
	}
	if retention < 0 {
		retention = 0
	}
	trimKeys := []string{qk.log, qk.msg, qk.delayed, qk.seen}
	trimArgs := []any{int64(offset), retention.Microseconds(), trimChunk}
	recKeys := []string{qk.done}

	pipe := s.rdb.Pipeline()
	rec := recordOutcomesScript.EvalSha(ctx, pipe, recKeys, recArgs...)
	trim := trimScript.EvalSha(ctx, pipe, trimKeys, trimArgs...)
	_, _ = pipe.Exec(ctx) // errors are read per command
	// A script the server did not know (first use, or after a restart) did
	// not run: run that one again with its source. Only that one: the other
	// may have run (a trim must not be counted twice).
	if isNoScript(rec.Err()) {
		rec = s.run(ctx, recordOutcomesScript, recKeys, recArgs...)
	}
	if isNoScript(trim.Err()) {
		trim = s.run(ctx, trimScript, trimKeys, trimArgs...)
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

// recordOutcomes writes records outside of a trim (a revoke).
func (s *core) recordOutcomes(ctx context.Context, qk *queueKeys, outcomes []drover.Outcome, policy drover.Outcomes) error {
	keep := policy.Keep()
	if keep <= 0 || len(outcomes) == 0 {
		return nil
	}
	args, err := appendRecordArgs(append(make([]any, 0, 2+2*len(outcomes)), policy.MaxRecords(), keep.Milliseconds()), qk.done, outcomes)
	if err != nil {
		return err
	}
	return s.run(ctx, recordOutcomesScript, []string{qk.done}, args...).Err()
}

// appendOutcome appends o as the JSON object kept in a bucket: the fields
// of drover.Outcome with zero values left out ("state" absent means
// succeeded) and without the id (the hash field). It is written by hand:
// the worker writes one record per succeeded task, and both reflection and
// bytes sent were most of what records cost.
func appendOutcome(b []byte, o *drover.Outcome) []byte {
	b = append(b, '{')
	if o.State != drover.JobSucceeded && o.State != "" {
		b = append(b, `"state":`...)
		b = appendJSONString(b, string(o.State))
		b = append(b, ',')
	}
	if o.Task != "" {
		b = append(b, `"task":`...)
		b = appendJSONString(b, o.Task)
		b = append(b, ',')
	}
	if o.Attempt != 0 {
		b = append(b, `"attempt":`...)
		b = strconv.AppendInt(b, int64(o.Attempt), 10)
		b = append(b, ',')
	}
	if o.ExitCode != 0 {
		b = append(b, `"exit_code":`...)
		b = strconv.AppendInt(b, int64(o.ExitCode), 10)
		b = append(b, ',')
	}
	b = append(b, `"finished_at":"`...)
	b = o.FinishedAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if o.Duration != 0 {
		b = append(b, `,"duration_seconds":`...)
		b = strconv.AppendFloat(b, o.Duration, 'g', -1, 64)
	}
	if o.Member != "" {
		b = append(b, `,"member":`...)
		b = appendJSONString(b, o.Member)
	}
	if o.By != "" {
		b = append(b, `,"by":`...)
		b = appendJSONString(b, o.By)
	}
	if o.StdoutTail != "" {
		b = append(b, `,"stdout_tail":`...)
		b = appendJSONString(b, o.StdoutTail)
	}
	return append(b, '}')
}
