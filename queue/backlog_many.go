package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// backlogGroup is the most queues one backlog-many call measures on a
// standalone server (on a Cluster a call covers queues of one slot).
const backlogGroup = 256

// BacklogMany measures many queues, each after its own offset, as Backlog
// does one: one round trip and one connection for all of them, one script
// call per 256 queues on a standalone server, per slot on a Cluster
// (backlogManySource). A worker with thousands of busy queues publishes
// their backlog gauges this way; one Backlog call per queue, each holding
// one of the client's connections, made every other read wait for a
// connection (docs/decisions.md, "Busy runtime latency"), and a script
// call per queue cost Redis a call and a TIME per queue (docs/decisions.md,
// "Issue 43: the backlog gauges in one call"). Results and errors are in
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
	// An invalid name fails its own result only; the others are measured.
	valid, at := make([]string, 0, len(queues)), make([]int, 0, len(queues)) // at: index in queues
	for i, q := range queues {
		if err := drover.ValidateQueueName(q); err != nil {
			errs[i] = fmt.Errorf("backlog: %w", err)
			continue
		}
		valid, at = append(valid, q), append(at, i)
	}
	groups, err := s.queueGroups(valid, backlogGroup)
	if err != nil { // cannot happen: every name is valid
		for _, i := range at {
			errs[i] = fmt.Errorf("backlog: %w", err)
		}
		return out, errs
	}
	calls := make([]*scriptCall, groups.len())
	for g := range calls {
		lo, hi := groups.bounds[g], groups.bounds[g+1]
		c := &scriptCall{keys: s.cutKeys(valid, groups, lo, hi, "log", "delayed", "dead"), args: make([]any, 0, hi-lo)}
		for k := lo; k < hi; k++ {
			c.args = append(c.args, "("+formatInt(int64(offsets[at[groups.index(k)]])))
		}
		calls[g] = c
	}
	s.evalPipelined(ctx, backlogManyScript, calls)
	for g, c := range calls {
		lo, hi := groups.bounds[g], groups.bounds[g+1]
		vals, err := c.cmd.Int64Slice()
		if err == nil && len(vals) != 1+4*(hi-lo) {
			err = fmt.Errorf("backlog script returned %d values for %d queues", len(vals), hi-lo)
		}
		for k := lo; k < hi; k++ {
			i, j := at[groups.index(k)], 1+4*(k-lo)
			if err != nil {
				errs[i] = fmt.Errorf("backlog of %s after %d: %w", queues[i], offsets[i], err)
				continue
			}
			b := Backlog{Lag: vals[j], Oldest: drover.Position(vals[j+1]), Delayed: vals[j+2], Dead: vals[j+3]}
			if now := vals[0]; b.Oldest > 0 && now > vals[j+1] {
				b.OldestAge = time.Duration(now-vals[j+1]) * time.Microsecond
			}
			out[i] = b
		}
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
