package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// replaceEnvelopeSource replaces the envelope of a message that is in the
// log (a parked head whose args an operator edits), keeping its position.
//
//	KEYS[1] log  KEYS[2] msg
//	ARGV[1] id  ARGV[2] the new envelope
//
// Returns 1, or 0 when the id is not in the log (nothing is changed then).
const replaceEnvelopeSource = `-- drover replace-envelope v1
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
`

var replaceEnvelopeScript = redis.NewScript(replaceEnvelopeSource)

// ReplaceEnvelope replaces the envelope of message id, which must be in
// queue's log, atomically; its position stays. It fails with
// drover.ErrNotFound when id is not in the log. Only for a queue whose
// owner does not run the message now: a parked queue.
func (s Operator) ReplaceEnvelope(ctx context.Context, queue, id string, raw []byte) error {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return fmt.Errorf("replace envelope: %w", err)
	}
	n, err := s.run(ctx, replaceEnvelopeScript, []string{qk.log, qk.msg}, id, raw).Int()
	if err != nil {
		return fmt.Errorf("replace envelope of %s in %s: %w", id, queue, err)
	}
	if n == 0 {
		return fmt.Errorf("replace envelope of %s in %s: not in the log: %w", id, queue, drover.ErrNotFound)
	}
	return nil
}

// parkHeadSource records a parked head: its recorded starts (the field
// <id>\0a of :msg; also in the old layout's :attempts) are forgotten (the head's attempts start again when an operator resumes
// the queue or retries it) and its envelope is replaced by one that carries
// the attempts it made (attempt, last_error, attempt_errors), so that the
// job status, `ctl messages` and the dead letter of a skip show them.
// The envelope is replaced only while it is still the one the worker read:
// an operator who edited the head's args meanwhile keeps the edit.
//
//	KEYS[1] log  KEYS[2] msg  KEYS[3] attempts (the old layout's starts)
//	ARGV[1] id  ARGV[2] the envelope as read  ARGV[3] the parked envelope
//
// Returns 1, or 0 when the id is not in the log (nothing is changed then).
const parkHeadSource = `-- drover park-head v2
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1] .. '\0a')
redis.call('HDEL', KEYS[3], ARGV[1])
if redis.call('HGET', KEYS[2], ARGV[1]) == ARGV[2] then redis.call('HSET', KEYS[2], ARGV[1], ARGV[3]) end
return 1
`

var parkHeadScript = redis.NewScript(parkHeadSource)

// ParkHead records that queue parked at its head id (worker.Store): it
// forgets the head's recorded starts and, when the stored envelope is
// still read, replaces it with parked, which carries the attempts made.
// A head no longer in the log (moved to the dead letters) is left alone.
// One round trip, after the queue's pause flag is written.
func (s Log) ParkHead(ctx context.Context, queue, id string, read, parked []byte) error {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return fmt.Errorf("park head: %w", err)
	}
	if err := s.run(ctx, parkHeadScript, []string{qk.log, qk.msg, qk.attempts}, id, read, parked).Err(); err != nil {
		return fmt.Errorf("park head %s of %s: %w", id, queue, err)
	}
	return nil
}
