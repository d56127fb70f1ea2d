package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// A message's attempt count lives with the message (docs/redis-schema.md,
// "Attempts"): before each start of a message its owner adds one to the
// message's starts field in the queue's :msg hash (startsField: beside its
// envelope), and the count the increment returns is the message's starts
// so far, whichever workers ran it. The field goes where the envelope goes
// (trim, dead letter, revoke: the same HDEL) and is forgotten when an
// ordered queue parks at the message (ParkHead), whose attempts start
// again when it is resumed. The old layout kept it in the queue's :attempts
// hash; a read that asks for starts moves those first
// (migrateStartsFunction).

// RecordStarts records one start of each message ids[i] of queues[i] and
// returns each message's starts so far, this one included, in order: one
// HINCRBY per message, all in one pipelined round trip. It fails as a
// whole: a start whose record is not known to be written must not run.
func (s Log) RecordStarts(ctx context.Context, queues, ids []string) ([]int, error) {
	if len(queues) != len(ids) {
		return nil, fmt.Errorf("record starts: %d queues for %d ids", len(queues), len(ids))
	}
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) == 1 {
		return s.recordStart(ctx, queues[0], ids[0])
	}
	cmds := make([]*redis.IntCmd, len(ids))
	pipe := s.rdb.Pipeline()
	for i, q := range queues {
		qk, err := s.queueKeys(q)
		if err != nil {
			return nil, fmt.Errorf("record starts: %w", err)
		}
		if ids[i] == "" {
			return nil, fmt.Errorf("record starts in %s: empty id", q)
		}
		// As recordStart builds it: the key by pointer, not boxed.
		cmds[i] = redis.NewIntCmd(ctx, "hincrby", &qk.msg, startsField(ids[i]), 1)
		_ = pipe.Process(ctx, cmds[i])
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("record the starts of %d messages: %w", len(ids), err)
	}
	out := make([]int, len(cmds))
	for i, c := range cmds {
		out[i] = int(c.Val())
	}
	return out, nil
}

// recordStart is RecordStarts of one message: a worker's runner at low
// concurrency sends its start alone, and a pipeline of one command costs
// the client a Pipeline, its command list and the pipeline's own pool for
// nothing. The HINCRBY is built as script_call.go builds a script call:
// the key by pointer (it outlives the call), so the command costs the
// field's string, the argument list, the command and the reply's slice.
// Redis receives the same command as in a pipeline.
func (s Log) recordStart(ctx context.Context, queue, id string) ([]int, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return nil, fmt.Errorf("record starts: %w", err)
	}
	if id == "" {
		return nil, fmt.Errorf("record starts in %s: empty id", queue)
	}
	field := startsField(id)
	cmd := redis.NewIntCmd(ctx, "hincrby", &qk.msg, field, 1)
	if err := s.rdb.Process(ctx, cmd); err != nil {
		return nil, fmt.Errorf("record the starts of 1 message: %w", err)
	}
	return []int{int(cmd.Val())}, nil
}
