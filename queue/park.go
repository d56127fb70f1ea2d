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
