package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// DelayedEntry is one message of the delayed set (a scheduled job or a
// retry waiting for its backoff).
type DelayedEntry struct {
	ID  string
	Due time.Time
	// Raw is the envelope from :msg; nil when it is missing.
	Raw []byte
}

// Delayed lists up to limit delayed messages of queue, soonest due first,
// skipping the first offset (for paging), in two round trips. limit <= 0
// means 100.
func (s *Store) Delayed(ctx context.Context, queue string, offset, limit int) ([]DelayedEntry, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return nil, fmt.Errorf("list delayed: %w", err)
	}
	offset = max(offset, 0)
	if limit <= 0 {
		limit = 100
	}
	zs, err := s.rdb.ZRangeWithScores(ctx, qk.delayed, int64(offset), int64(offset+limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("list delayed of %s: %w", queue, err)
	}
	if len(zs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(zs))
	for i, z := range zs {
		ids[i], _ = z.Member.(string)
	}
	envs, err := s.rdb.HMGet(ctx, qk.msg, ids...).Result()
	if err != nil {
		return nil, fmt.Errorf("list delayed of %s: %w", queue, err)
	}
	out := make([]DelayedEntry, len(zs))
	for i, z := range zs {
		out[i] = DelayedEntry{ID: ids[i], Due: time.UnixMilli(int64(z.Score))}
		if s, ok := envs[i].(string); ok {
			out[i].Raw = []byte(s)
		}
	}
	return out, nil
}

// Message states, as MessageInfo.State.
const (
	StatePending = "pending" // in the log (processed or not: see Position against the offset)
	StateDelayed = "delayed"
	StateDead    = "dead"
)

// MessageInfo is one message found by id.
type MessageInfo struct {
	ID    string
	State string
	// Position is the log position (pending), Due the due time (delayed),
	// DeadLetter the record (dead).
	Position   drover.Position
	Due        time.Time
	Raw        []byte
	DeadLetter *drover.DeadLetter
}

// Message finds id in queue: in the log, the delayed set or the dead
// letters, in one pipelined round trip. It fails with drover.ErrNotFound
// when the id is in none of them (never enqueued, revoked, or processed and
// trimmed).
func (s *Store) Message(ctx context.Context, queue, id string) (MessageInfo, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return MessageInfo{}, fmt.Errorf("find message: %w", err)
	}
	pipe := s.rdb.Pipeline()
	pos := pipe.ZScore(ctx, qk.log, id)
	due := pipe.ZScore(ctx, qk.delayed, id)
	env := pipe.HGet(ctx, qk.msg, id)
	dead := pipe.HGet(ctx, qk.deadmsg, id)
	if _, err := pipe.Exec(ctx); err != nil && !errNil(err) {
		return MessageInfo{}, fmt.Errorf("find message %s in %s: %w", id, queue, err)
	}
	mi := MessageInfo{ID: id}
	if b, err := env.Bytes(); err == nil {
		mi.Raw = b
	}
	switch {
	case due.Err() == nil:
		mi.State, mi.Due = StateDelayed, time.UnixMilli(int64(due.Val()))
	case pos.Err() == nil:
		mi.State, mi.Position = StatePending, drover.Position(pos.Val())
	case dead.Err() == nil:
		b, _ := dead.Bytes()
		dl := parseDeadRecord(id, b)
		mi.State, mi.DeadLetter = StateDead, &dl
	default:
		return MessageInfo{}, fmt.Errorf("message %s in %s: %w", id, queue, drover.ErrNotFound)
	}
	return mi, nil
}

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
func (s *Store) RunNow(ctx context.Context, queue, id string) (drover.Position, error) {
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
// log, newest first, keeping the last AuditLimit records.
func (s *Store) AppendAudit(ctx context.Context, record []byte) error {
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
func (s *Store) Audit(ctx context.Context, offset, limit int) ([][]byte, error) {
	offset = max(offset, 0)
	if limit <= 0 {
		limit = 100
	}
	vals, err := s.rdb.LRange(ctx, s.keys.audit(), int64(offset), int64(offset+limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}
