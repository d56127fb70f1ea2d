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
func (s Inspector) Delayed(ctx context.Context, queue string, offset, limit int) ([]DelayedEntry, error) {
	qk, err := s.queueKeys(queue)
	if err != nil {
		return nil, fmt.Errorf("list delayed: %w", err)
	}
	ids, due, envs, err := s.zpage(ctx, qk.delayed, qk.msg, offset, limit, false)
	if err != nil {
		return nil, fmt.Errorf("list delayed of %s: %w", queue, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	out := make([]DelayedEntry, len(ids))
	for i, id := range ids {
		out[i] = DelayedEntry{ID: id, Due: time.UnixMilli(int64(due[i]))}
		if s, ok := envs[i].(string); ok {
			out[i].Raw = []byte(s)
		}
	}
	return out, nil
}

// zpage reads a page of the sorted set key (page: offset, limit), lowest
// score first or, when rev, highest first: its members, their scores, and
// what hash holds under each member (nil where it holds nothing). Two round
// trips; an empty page is one.
func (s *core) zpage(ctx context.Context, key, hash string, offset, limit int, rev bool) (ids []string, scores []float64, vals []any, err error) {
	start, stop := page(offset, limit)
	r := redis.ZRangeArgs{Key: key, Start: start, Stop: stop, Rev: rev}
	zs, err := s.rdb.ZRangeArgsWithScores(ctx, r).Result()
	if err != nil || len(zs) == 0 {
		return nil, nil, nil, err
	}
	ids, scores = make([]string, len(zs)), make([]float64, len(zs))
	for i, z := range zs {
		ids[i], _ = z.Member.(string)
		scores[i] = z.Score
	}
	vals, err = s.rdb.HMGet(ctx, hash, ids...).Result()
	if err != nil {
		return nil, nil, nil, err
	}
	return ids, scores, vals, nil
}

// page returns the bounds (inclusive, as ZRANGE and LRANGE take them) of a
// page of a listing: skip offset (< 0: none), take limit (<= 0: 100).
func page(offset, limit int) (start, stop int64) {
	offset = max(offset, 0)
	if limit <= 0 {
		limit = 100
	}
	return int64(offset), int64(offset + limit - 1)
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
func (s Inspector) Message(ctx context.Context, queue, id string) (MessageInfo, error) {
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
