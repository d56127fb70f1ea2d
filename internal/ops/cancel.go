package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/jobs"
)

// Cancel stops the running attempt of message id in queue q on behalf
// of who (docs/semantics.md, "Cancelling a running task"): the queue's
// owner, found through ZooKeeper, kills the task's process group, then
// dead-letters, retries or parks the message as then says ("" for the
// queue's default, "dead", "retry", "park"). It returns when the owner has
// begun stopping the task.
//
// It fails with ErrBadInput for a bad then, drover.ErrQueueNotFound for an
// unknown queue, ErrRefused when the message does not run now (the error
// says where it is: pending at a position, delayed, finished) or cannot be
// killed (an inline handler), ErrUnreachable when the owner does not
// answer.
func (o Jobs) Cancel(ctx context.Context, q, id, who, then string) (jobs.Cancelled, error) {
	switch then {
	case "", "dead", "retry", "park":
	default:
		return jobs.Cancelled{}, badInput("then: want retry, dead or park, have %q", then)
	}
	if id == "" {
		return jobs.Cancelled{}, badInput("id: empty")
	}
	if err := o.knownQueue(ctx, q); err != nil {
		return jobs.Cancelled{}, err
	}
	c, err := o.lookup().Cancel(ctx, q, id, who, then)
	var nr *jobs.NotRunningError
	switch {
	case err == nil:
		return c, nil
	case errors.As(err, &nr), errors.Is(err, jobs.ErrCannotCancel):
		return c, fmt.Errorf("%w: %w", ErrRefused, err)
	case ctx.Err() == nil && !errors.Is(err, context.Canceled):
		return c, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return c, err
}

// Status reads the status of message id of queue q (the console's job
// status: jobs.Lookup.Job), asking its owner whether it runs.
func (o Jobs) Status(ctx context.Context, q, id string) (drover.JobStatus, error) {
	return o.lookup().Job(ctx, q, id)
}

// lookup is the jobs lookup over the fleet's store and session.
func (o Jobs) lookup() *jobs.Lookup {
	return &jobs.Lookup{Store: o.store.Jobs(), Fleet: jobs.SessionFleet{Session: o.zk}, HTTP: o.http, Token: o.token}
}
