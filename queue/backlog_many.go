package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// BacklogMany measures many queues, each after its own offset, as Backlog
// does one, in one pipeline: one round trip and one connection for all of
// them. A worker with thousands of busy queues publishes their backlog
// gauges this way; one Backlog call per queue, each holding one of the
// client's connections, made every other read wait for a connection
// (docs/decisions.md, "Busy runtime latency"). Results and errors are in
// the order of queues; offsets[i] is the offset of queues[i].
func (s Log) BacklogMany(ctx context.Context, queues []string, offsets []drover.Position) ([]Backlog, []error) {
	out := make([]Backlog, len(queues))
	errs := make([]error, len(queues))
	if len(offsets) != len(queues) {
		err := fmt.Errorf("backlog many: %d offsets for %d queues", len(offsets), len(queues))
		for i := range errs {
			errs[i] = err
		}
		return out, errs
	}
	calls := make([]*scriptCall, 0, len(queues))
	at := make([]int, 0, len(queues)) // call → index in queues
	for i, q := range queues {
		qk, err := s.queueKeys(q)
		if err != nil {
			errs[i] = fmt.Errorf("backlog: %w", err)
			continue
		}
		calls = append(calls, &scriptCall{
			queues: []string{q},
			keys:   []string{qk.log, qk.delayed, qk.dead},
			args:   []any{"(" + formatInt(int64(offsets[i]))},
		})
		at = append(at, i)
	}
	s.evalPipelined(ctx, backlogScript, calls)
	for k, c := range calls {
		i := at[k]
		vals, err := c.cmd.Int64Slice()
		if err == nil && len(vals) != 5 {
			err = fmt.Errorf("backlog script returned %d values, want 5", len(vals))
		}
		if err != nil {
			errs[i] = fmt.Errorf("backlog of %s after %d: %w", queues[i], offsets[i], err)
			continue
		}
		b := Backlog{Lag: vals[0], Oldest: drover.Position(vals[1]), Delayed: vals[3], Dead: vals[4]}
		if b.Oldest > 0 && vals[2] > vals[1] {
			b.OldestAge = time.Duration(vals[2]-vals[1]) * time.Microsecond
		}
		out[i] = b
	}
	return out, errs
}

// NonEmpty reports, for each queue in queues (in order), whether its log
// holds any message: one EXISTS per queue, pipelined. Lag after any offset
// is zero for a queue whose log is empty, so a reader that measures many
// queues (the scaler, over a selection of 100,000) needs their offsets and
// backlogs only for the queues this reports non-empty.
func (s Inspector) NonEmpty(ctx context.Context, queues []string) ([]bool, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(queues))
	for i, q := range queues {
		qk, err := s.queueKeys(q)
		if err != nil {
			return nil, fmt.Errorf("non-empty queues: %w", err)
		}
		cmds[i] = pipe.Exists(ctx, qk.log)
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("non-empty queues: %w", err)
	}
	out := make([]bool, len(queues))
	for i, c := range cmds {
		out[i] = c.Val() > 0
	}
	return out, nil
}
