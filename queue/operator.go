package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// What an operator does to one message (revoke it while delayed, run a
// delayed one now) and the audit trail of operators' actions: the
// Operator role. Parking's envelope swap is in park.go.

// runNowSource moves one delayed id into the log with a fresh position, so
// that the queue's owner runs it next, and wakes the owner.
//
//	KEYS[1] log  KEYS[2] seq  KEYS[3] delayed  KEYS[4] owner
//	ARGV[1] id  ARGV[2] the channel for a queue without an owner (the
//	wake-up goes to the channel the :owner key names, or to this one; ""
//	for none)  ARGV[3] queue name
//
// Returns the new position, or 0 when the id is not delayed (nothing is
// changed then).
const runNowSource = `-- drover run-now v2
if not redis.call('ZSCORE', KEYS[3], ARGV[1]) then return 0 end
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local pos = math.max(now_us, last + 1)
redis.call('ZADD', KEYS[1], pos, ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('SET', KEYS[2], pos)
if ARGV[2] ~= '' then redis.call('PUBLISH', redis.call('GET', KEYS[4]) or ARGV[2], ARGV[3]) end
return pos
`

var runNowScript = redis.NewScript(runNowSource)

// RunNow promotes one delayed message into the log at once, atomically,
// and returns its position. It fails with drover.ErrNotFound when id is not
// delayed (unknown, revoked or already promoted).
func (s Operator) RunNow(ctx context.Context, queue, id string) (drover.Position, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, fmt.Errorf("run now: %w", err)
	}
	channel := ""
	if s.wakeups {
		channel = s.keys.unownedChannel()
	}
	pos, err := s.run(ctx, runNowScript, []string{qk.log, qk.seq, qk.delayed, qk.owner}, id, channel, queue).Int64()
	if err != nil {
		return 0, fmt.Errorf("run %s of %s now: %w", id, queue, err)
	}
	if pos == 0 {
		return 0, fmt.Errorf("run %s of %s now: not a delayed message: %w", id, queue, drover.ErrNotFound)
	}
	return drover.Position(pos), nil
}

// AuditLimit is how many audit records AppendAudit keeps.
const AuditLimit = 10000

// AppendAudit adds one record (JSON, written by the caller) to the audit
// log, newest first, keeping the last AuditLimit records. A record longer
// than MaxAuditRecord is refused: the caller caps its fields.
func (s Operator) AppendAudit(ctx context.Context, record []byte) error {
	if len(record) > MaxAuditRecord {
		return fmt.Errorf("append audit record: %d bytes, at most %d", len(record), MaxAuditRecord)
	}
	pipe := s.rdb.TxPipeline()
	pipe.LPush(ctx, s.keys.audit(), record)
	pipe.LTrim(ctx, s.keys.audit(), 0, AuditLimit-1)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("append audit record: %w", err)
	}
	return nil
}

// Audit returns up to limit audit records, newest first, after skipping
// offset.
func (s Operator) Audit(ctx context.Context, offset, limit int) ([][]byte, error) {
	start, stop := page(offset, limit)
	vals, err := s.rdb.LRange(ctx, s.keys.audit(), start, stop).Result()
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}

// Revoke deletes a delayed message of queue, with its envelope and its
// dedupe record (the id may be enqueued again), and returns true; it returns
// false, changing nothing, when the id is unknown or no longer delayed
// (already promoted). It keeps a "revoked" outcome record for the default
// retention (24h); RevokeRecording follows a queue's own policy.
func (s Operator) Revoke(ctx context.Context, queue, id string) (bool, error) {
	return s.RevokeRecording(ctx, queue, id, drover.Outcomes{}, "")
}

// RevokeRecording is Revoke keeping the outcome record as policy says (none
// when policy.Keep() is 0); by names who revoked it, for the record.
func (s Operator) RevokeRecording(ctx context.Context, queue, id string, policy drover.Outcomes, by string) (bool, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return false, fmt.Errorf("revoke %s in %s: %w", id, queue, err)
	}
	n, err := s.run(ctx, revokeScript, []string{qk.log, qk.msg, qk.delayed, qk.seen, qk.attempts}, id).Int()
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

// forgetStartsSource deletes the recorded starts (the field <id>\0a of
// :msg; also in the old layout's :attempts) of every message in the log
// with a position in (ARGV[1], ARGV[2]], a chunk of ids at a time: an
// operator's replay (an offset reset backwards) runs those messages as new,
// with every attempt of max_attempts.
//
//	KEYS[1] log  KEYS[2] msg  KEYS[3] attempts (the old layout's starts)
//	ARGV[1] after (exclusive)  ARGV[2] up to (inclusive)  ARGV[3] chunk
//
// Returns the number of fields deleted.
const forgetStartsSource = `-- drover forget-starts v2
local ids = redis.call('ZRANGE', KEYS[1], '(' .. ARGV[1], ARGV[2], 'BYSCORE')
local n, chunk = 0, tonumber(ARGV[3])
for i = 1, #ids, chunk do
  local part = {}
  for j = i, math.min(i + chunk - 1, #ids) do part[#part + 1] = ids[j] .. '\0a' end
  n = n + redis.call('HDEL', KEYS[2], unpack(part))
  n = n + redis.call('HDEL', KEYS[3], unpack(ids, i, math.min(i + chunk - 1, #ids)))
end
return n
`

var forgetStartsScript = redis.NewScript(forgetStartsSource)

// ForgetStarts deletes the recorded starts of queue's messages with a
// position after after and at most upTo, so that a replay of them (an
// offset moved back over them) starts each at attempt 0. It returns how
// many records it deleted. Messages outside the range keep their count.
func (s Operator) ForgetStarts(ctx context.Context, queue string, after, upTo drover.Position) (int64, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return 0, fmt.Errorf("forget starts: %w", err)
	}
	if upTo <= after {
		return 0, nil
	}
	n, err := s.run(ctx, forgetStartsScript, []string{qk.log, qk.msg, qk.attempts}, int64(after), int64(upTo), trimChunk).Int64()
	if err != nil {
		return 0, fmt.Errorf("forget the starts of %s in (%d, %d]: %w", queue, after, upTo, err)
	}
	return n, nil
}
