package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
)

// cancelWaitLimit bounds how long `ctl cancel` waits for the task to stop:
// past the executor's kill grace (SIGTERM, then SIGKILL after 5 s by
// default) with room for the record's write.
const cancelWaitLimit = 30 * time.Second

// ctlCancelCommand stops a running task (docs/semantics.md, "Cancelling a
// running task"). Every cancel, and every refusal of one, goes to the
// fleet's audit log.
func (a *app) ctlCancelCommand() *cobra.Command {
	var (
		then   string
		noWait bool
	)
	cmd := &cobra.Command{
		Use:   "cancel <queue> <id>",
		Short: "Stop a running task: kill its process group, then dead-letter or retry it",
		Long: `Stop the running attempt of message <id> of <queue>. The queue's owner sends
SIGTERM to the task's process group, and SIGKILL after the kill grace (as
at a timeout); a pooled task's child is stopped and replaced. The attempt's
record says it was cancelled and by whom: drover ctl job shows "cancelled
by <who>" and BY, for a message dead-lettered, retried or parked by it.

--then says what follows:
  dead   move the message to the dead letters ("cancelled by <you>"): the
         default, except on an ordered queue with on_failure park
  park   park the queue at the message (ordered queues with on_failure
         park; their default): nothing behind it runs until it is resolved
         with 'drover ctl parked'; elsewhere the same as dead
  retry  run it again at once as its next attempt (in place on an ordered
         queue), even past max_attempts

A message that is not running is not touched: the command exits 5
(refused) and says where the message is (pending at a position, delayed,
finished). Inline handlers run in the worker and cannot be killed.
Without --no-wait it waits until the task has stopped and prints the
message's state.`,
		Example: `  drover ctl job emails 01HX…          # running, pid 4242
  drover ctl cancel emails 01HX…       # killed, dead-lettered: "cancelled by you@host"
  drover ctl cancel emails 01HX… --then retry
  drover ctl cancel payments-42 01HX…  # an ordered queue that parks: parked at it`,
		Args:              exactArgs(2, "<queue> <id>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			q, id := args[0], args[1]
			c, err := o.Jobs().Cancel(e.ctx, q, id, operator(), then)
			e.audit("job.cancel", "/queues/"+q+"/running/"+id+"/cancel", "then="+then, err)
			if err != nil {
				return opsError(err)
			}
			if noWait {
				return e.report(c, "cancelling %s of %s on %s (pid %d): SIGTERM sent to its process group\n", id, q, c.Member, c.PID)
			}
			st, err := waitStopped(e.ctx, o.Jobs().Status, q, id, then)
			if err != nil {
				return err
			}
			if e.json {
				return writeJSON(e.a.stdout, map[string]any{"cancelled": c, "status": st})
			}
			e.printf("cancelled %s of %s on %s (pid %d); now %s", id, q, c.Member, c.PID, st.State)
			if st.Error != "" {
				e.printf(": %s", st.Error)
			}
			e.printf("\n")
			return nil
		}),
	}
	cmd.Flags().StringVar(&then, "then", "", "what follows: dead, retry or park (default: dead; park on an ordered queue with on_failure park)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the owner began stopping the task")
	return cmd
}

// outcomeWait bounds how long `ctl cancel` waits, once the task stopped,
// for its owner to write what follows: the message reads pending between
// the task's end and its dead-lettering, and stays pending when it parks
// its queue or is retried in place.
const outcomeWait = 2 * time.Second

// waitStopped polls the job's status until it no longer reads running and,
// unless then is "retry", no longer pending (at most outcomeWait more).
func waitStopped(ctx context.Context, status func(ctx context.Context, q, id string) (drover.JobStatus, error), q, id, then string) (drover.JobStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, cancelWaitLimit)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var stopped time.Time
	for {
		st, err := status(ctx, q, id)
		if err == nil && st.State != drover.JobRunning {
			if st.State != drover.JobPending || then == "retry" {
				return st, nil
			}
			if stopped.IsZero() {
				stopped = time.Now()
			} else if time.Since(stopped) >= outcomeWait {
				return st, nil
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New("still running")
			}
			return st, fmt.Errorf("cancel %s of %s: the task did not stop within %s: %w", id, q, cancelWaitLimit, err)
		case <-tick.C:
		}
	}
}
