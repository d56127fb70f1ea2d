package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

// trimBatch is the most queues trimmed in one pipeline.
const trimBatch = 256

// TrimMany trims many queues in one round trip per trimBatch queues: for
// each, TrimRecording's record and trim scripts, all in one pipeline. An
// owner's committer trims every queue of a commit flush with it, so that
// 500 progressed queues cost one round trip on one connection, not 500 on
// every connection of the client (which the queues' reads then waited
// behind). It returns one error per request, nil where the trim succeeded.
func (s *Store) TrimMany(ctx context.Context, reqs []drover.TrimRequest) []error {
	errs := make([]error, len(reqs))
	for i := 0; i < len(reqs); i += trimBatch {
		s.trimMany(ctx, reqs[i:min(i+trimBatch, len(reqs))], errs[i:])
	}
	return errs
}

type trimCall struct {
	recKeys, trimKeys []string
	recArgs, trimArgs []any
	rec, trim         *redis.Cmd
}

func (s *Store) trimMany(ctx context.Context, reqs []drover.TrimRequest, errs []error) {
	calls := make([]*trimCall, len(reqs))
	pipe := s.rdb.Pipeline()
	for i := range reqs {
		r := &reqs[i]
		qk, err := s.queueKeys(r.Queue)
		if err != nil {
			errs[i] = fmt.Errorf("trim: %w", err)
			continue
		}
		c := &trimCall{trimKeys: []string{qk.log, qk.msg, qk.delayed, qk.seen},
			trimArgs: []any{int64(r.Offset), max(r.Retention, 0).Microseconds(), trimChunk}}
		if keep := r.Policy.Keep(); len(r.Outcomes) > 0 && keep > 0 {
			c.recKeys = []string{qk.done}
			c.recArgs, err = outcomeArgs(r.Queue, r.Outcomes, r.Policy)
			if err != nil {
				errs[i] = err
				continue
			}
			c.rec = recordOutcomesScript.EvalSha(ctx, pipe, c.recKeys, c.recArgs...)
		}
		c.trim = trimScript.EvalSha(ctx, pipe, c.trimKeys, c.trimArgs...)
		calls[i] = c
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
	for i, c := range calls {
		if c == nil {
			continue
		}
		r := &reqs[i]
		// A script the server did not know did not run: run that one
		// again with its source, and only that one (as TrimRecording).
		if c.rec != nil && isNoScript(c.rec.Err()) {
			c.rec = s.run(ctx, recordOutcomesScript, c.recKeys, c.recArgs...)
		}
		if isNoScript(c.trim.Err()) {
			c.trim = s.run(ctx, trimScript, c.trimKeys, c.trimArgs...)
		}
		if c.rec != nil && c.rec.Err() != nil {
			errs[i] = fmt.Errorf("record %d outcomes of %s: %w", len(r.Outcomes), r.Queue, c.rec.Err())
			continue
		}
		n, err := c.trim.Int()
		if err != nil {
			errs[i] = fmt.Errorf("trim %s at %d: %w", r.Queue, r.Offset, err)
			continue
		}
		if n >= trimChunk {
			_, errs[i] = s.Trim(ctx, r.Queue, r.Offset, r.Retention)
		}
	}
}

// outcomeArgs is the record script's arguments for outcomes.
func outcomeArgs(queue string, outcomes []drover.Outcome, policy drover.Outcomes) ([]any, error) {
	args := make([]any, 0, 2+2*len(outcomes))
	args = append(args, policy.MaxRecords(), policy.Keep().Milliseconds())
	buf := make([]byte, 0, 160*len(outcomes))
	for i := range outcomes {
		o := &outcomes[i]
		if o.ID == "" {
			return nil, fmt.Errorf("record outcomes of %s: record %d has no id", queue, i)
		}
		start := len(buf)
		buf = appendOutcome(buf, o)
		args = append(args, o.ID, buf[start:len(buf):len(buf)])
	}
	return args, nil
}
