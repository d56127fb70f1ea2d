package main

import (
	"encoding/json"
	"errors"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/ops"
)

// ctlParkedCommand steers ordered queues parked at a failed head
// (on_failure park; docs/one-queue-per-key.md, "Parking a queue"). Every
// retry and skip, and every refusal of one, goes to the fleet's audit log.
func (a *app) ctlParkedCommand() *cobra.Command {
	cmd := groupCommand("parked", "Look at and resolve ordered queues parked at a failed head")
	cmd.Long = `An ordered queue with on_failure park pauses itself when its head message has
used its attempts: the pause flag names the message and its error, and
nothing behind it runs. Look at the head (show), then either retry it (its
args edited or not) or move it to the dead letters (skip). Both resume the
queue unless --keep-paused; 'drover ctl resume --queue Q' runs the head
again as it is. Every retry and skip is audited.`
	cmd.Example = `  drover ctl parked ls
  drover ctl parked show payments-42
  drover ctl parked retry payments-42 01HX… --args '{"amount": 10}'
  drover ctl parked skip payments-42 01HX…`

	ls := &cobra.Command{
		Use:     "ls",
		Short:   "List the queues parked at a failed head",
		Example: "  drover ctl parked ls -o json",
		Args:    noArgs,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, _ []string) error {
			pqs, err := o.Jobs().ParkedQueues(e.ctx)
			if err != nil {
				return err
			}
			if e.json {
				return writeJSON(e.a.stdout, pqs)
			}
			if len(pqs) == 0 {
				e.printf("no queue is parked at a failed head\n")
				return nil
			}
			for _, pq := range pqs {
				h := pq.Pause.Head
				e.printf("%s\tat %s (task %s, %d attempts) since %s: %s\n", pq.Queue, h.ID, h.Task, h.Attempts,
					pq.Pause.At.Format("2006-01-02T15:04:05Z"), h.Error)
			}
			return nil
		}),
	}

	show := &cobra.Command{
		Use:               "show <queue>",
		Short:             "Show a parked queue's head: the message, its error and who parked it",
		Example:           "  drover ctl parked show payments-42",
		Args:              exactArgs(1, "<queue>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			pq, err := o.Jobs().ParkedHead(e.ctx, args[0])
			if err != nil {
				return refusedOf(err)
			}
			if e.json {
				return writeJSON(e.a.stdout, pq)
			}
			h := pq.Pause.Head
			e.printf("queue:     %s\nparked by: %s at %s\nhead:      %s (task %s, position %d)\nattempts:  %d\nexit code: %d\nerror:     %s\n",
				pq.Queue, pq.Pause.By, pq.Pause.At.Format("2006-01-02T15:04:05Z"), h.ID, h.Task, h.Position, h.Attempts, h.ExitCode, h.Error)
			if pq.Message != nil && pq.Message.Envelope != nil {
				e.printf("envelope:  %s\n", pq.Message.Envelope)
			} else {
				e.printf("envelope:  (not in the log: moved to the dead letters already?)\n")
			}
			return nil
		}),
	}

	var (
		args       *json.RawMessage
		keepPaused *bool
	)
	retry := &cobra.Command{
		Use:   "retry <queue> <id>",
		Short: "Run the parked head again with fresh attempts (--args replaces its args), then resume",
		Long: `Run the parked head <id> again, with fresh attempts: --args replaces its
args first (the message keeps its id and its place). The queue resumes
unless --keep-paused. <id> must be the head 'parked show' names.`,
		Example: `  drover ctl parked retry payments-42 01HX…
  drover ctl parked retry payments-42 01HX… --args '{"amount": 10}' --keep-paused`,
		Args:              exactArgs(2, "<queue> <id>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, a []string) error {
			edited := *args
			err := o.Jobs().RetryParked(e.ctx, a[0], a[1], edited, *keepPaused)
			detail := "head " + a[1]
			if edited != nil {
				detail += ", args edited"
			}
			e.audit("parked.retry", "/queues/"+a[0]+"/parked/retry", detail, err)
			if err != nil {
				return refusedOf(err)
			}
			return e.parkedDone(a[0], a[1], "retried", *keepPaused)
		}),
	}
	args = argsFlag(retry.Flags(), "JSON that replaces the head's args")
	keepPaused = keepPausedFlag(retry.Flags())

	var skipKeep *bool
	skip := &cobra.Command{
		Use:   "skip <queue> <id>",
		Short: "Move the parked head to the dead letters, then resume",
		Long: `Move the parked head <id> to the queue's dead letters (with its error and
who moved it); the next message becomes the head. The queue resumes
unless --keep-paused: it then stays paused by you, no longer parked at a
head ('parked ls' leaves it out), and 'drover ctl resume --queue Q' runs
the next message. <id> must be the head 'parked show' names.`,
		Example:           "  drover ctl parked skip payments-42 01HX…",
		Args:              exactArgs(2, "<queue> <id>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, a []string) error {
			err := o.Jobs().SkipParked(e.ctx, a[0], a[1], operator(), *skipKeep)
			e.audit("parked.skip", "/queues/"+a[0]+"/parked/skip", "head "+a[1]+" to the dead letters", err)
			if err != nil {
				return refusedOf(err)
			}
			return e.parkedDone(a[0], a[1], "moved to the dead letters", *skipKeep)
		}),
	}
	skipKeep = keepPausedFlag(skip.Flags())
	cmd.AddCommand(ls, show, retry, skip)
	return cmd
}

// parkedDone prints what a retry or skip did.
func (e *ctlEnv) parkedDone(q, id, what string, keepPaused bool) error {
	after := "the queue resumed"
	if keepPaused {
		after = "the queue stays paused"
	}
	return e.report(map[string]any{"queue": q, "id": id, "done": what, "resumed": !keepPaused}, "%s of %s %s; %s\n", id, q, what, after)
}

// refusedOf makes ops.ErrRefused exit with the "refused" code.
func refusedOf(err error) error {
	if errors.Is(err, ops.ErrRefused) {
		return refusedError{err}
	}
	return err
}
