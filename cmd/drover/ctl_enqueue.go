package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/queue"
)

func (a *app) ctlEnqueueCommand() *cobra.Command {
	var (
		id          string
		args        *json.RawMessage
		at          *time.Time
		in          *durationValue
		headers     []string
		maxAttempts int
		force       bool
	)
	cmd := &cobra.Command{
		Use:   "enqueue <queue> <task>",
		Short: "Enqueue a task, now or later, and print its id",
		Long: `Enqueue a task to a queue and print its id. --args is any JSON (the task
reads it from the envelope on stdin). --at or --in delays it (a delayed job
can be revoked until it is due). --id sets an idempotency key: enqueueing an
id the queue still knows is a no-op that prints the same id.

The queue must be configured or have been enqueued to before; --force
enqueues to a new queue (it is then created with defaults on first sight).`,
		Example: `  drover ctl enqueue emails send --args '{"to":"a@example.com"}'
  drover ctl enqueue reports build --in 10m --id report-2024-05
  drover ctl enqueue reports build --at 2030-01-02T03:04:05Z
  id=$(drover ctl enqueue hello greet -o json | jq -r .id)`,
		Args:              exactArgs(2, "<queue> <task>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.ctlRun(func(e *ctlEnv, pos []string) error {
			queueName, task := pos[0], pos[1]
			m := &drover.Message{Queue: queueName, Task: task, ID: id, MaxAttempts: maxAttempts}
			m.Args = *args
			if len(headers) > 0 {
				m.Headers = map[string]string{}
				for _, h := range headers {
					k, v, ok := strings.Cut(h, "=")
					if !ok || k == "" {
						return usagef("--header %q: want key=value", h)
					}
					m.Headers[k] = v
				}
			}
			if maxAttempts < 0 {
				return usagef("--max-attempts: must be ≥ 0, have %d", maxAttempts)
			}
			if task == "" {
				return usagef("<task>: must not be empty")
			}
			if err := queue.CheckID(id); err != nil {
				return usagef("--id: %v", err)
			}
			var due time.Time
			switch {
			case !at.IsZero() && in.given:
				return usagef("give --at or --in, not both")
			case !at.IsZero():
				due = *at
			case in.given:
				due = time.Now().Add(in.d)
			}
			if err := drover.ValidateQueueName(queueName); err != nil {
				return usageError{err}
			}
			if !force {
				if err := e.knownQueueAudited(queueName, "job.enqueue", "/queues/"+queueName+"/jobs"); err != nil {
					return err
				}
			}
			st, err := e.queues()
			if err != nil {
				return err
			}
			var res queue.EnqueueResult
			if due.IsZero() {
				res, err = st.Producer().Enqueue(e.ctx, m)
			} else {
				res, err = st.Producer().EnqueueAt(e.ctx, m, due)
			}
			// Audited as the console audits an HTTP enqueue (job.enqueue).
			e.audit("job.enqueue", "/queues/"+queueName+"/jobs", fmt.Sprintf("task=%s id=%s duplicate=%t", task, res.ID, res.Duplicate), err)
			if err != nil {
				return fmt.Errorf("enqueue %s to %s: %w", task, queueName, err)
			}
			if e.json {
				out := map[string]any{"id": res.ID, "queue": queueName, "task": task, "position": res.Position, "duplicate": res.Duplicate}
				if !due.IsZero() {
					out["due"] = due.UTC().Format(time.RFC3339Nano)
				}
				return writeJSON(e.a.stdout, out)
			}
			e.printf("%s\n", res.ID)
			if res.Duplicate {
				e.a.stderr.Write([]byte("note: the id was already known; nothing was enqueued\n"))
			}
			return nil
		}),
	}
	f := cmd.Flags()
	args = argsFlag(f, "the task's arguments, JSON")
	at = atFlag(f, "run at this time: RFC 3339, or YYYY-MM-DD HH:MM[:SS] local time")
	in = durationFlag(f, "in", 0, "90s, 10m or 2h", "run after this long, e.g. 90s, 10m, 2h")
	f.StringVar(&id, "id", "", "idempotency key (default: a generated id)")
	f.StringArrayVar(&headers, "header", nil, "a header, key=value (repeatable)")
	f.IntVar(&maxAttempts, "max-attempts", 0, "runs before dead-lettering (default: the queue's)")
	f.BoolVar(&force, "force", false, "enqueue even to a queue nobody configured or used")
	return cmd
}

// enqueueTimeFormats are the local-time forms --at accepts besides RFC 3339.
var enqueueTimeFormats = []string{"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02T15:04"}

// parseTime reads RFC 3339, or a date and time in the local zone.
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, f := range enqueueTimeFormats {
		if t, err := time.ParseInLocation(f, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want RFC 3339 (2030-01-02T15:04:05Z) or YYYY-MM-DD HH:MM[:SS], have %q", s)
}

func (a *app) ctlRevokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke <queue> <id>",
		Short: "Delete a delayed job before it is due",
		Long: `Delete a job enqueued with --at or --in (or waiting for a retry) before it
becomes due. Exits 3 when the id is not delayed: unknown, already due and
promoted to the queue, or revoked before. The job's status (drover ctl job)
then reads "revoked", with who revoked it, for the queue's outcome
retention.`,
		Example: `  id=$(drover ctl enqueue reports build --in 1h)
  drover ctl revoke reports "$id"`,
		Args:              exactArgs(2, "<queue> <id>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			// The console's path (ops.Messages.Revoke: the queue's outcome
			// policy, by you) and its audit record.
			err := o.Messages().Revoke(e.ctx, args[0], args[1], operator())
			e.audit("delayed.revoke", "/queues/"+args[0]+"/delayed/"+args[1]+"/revoke", "", err)
			ok := err == nil
			if err != nil && !errors.Is(err, drover.ErrNotFound) {
				return opsError(e.queueHint(args[0], err))
			}
			if e.json {
				if err := writeJSON(e.a.stdout, map[string]any{"queue": args[0], "id": args[1], "revoked": ok}); err != nil {
					return err
				}
			}
			if !ok {
				return fmt.Errorf("revoke %s in %s: not a delayed job (unknown, already due, or revoked): %w", args[1], args[0], drover.ErrNotFound)
			}
			if !e.json {
				e.printf("revoked %s\n", args[1])
			}
			return nil
		}),
	}
}
