package main

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/ops"
)

// ops returns the shared operations (package ops) over the command's
// ZooKeeper session and queue store, as the web console's API uses them.
func (e *ctlEnv) ops() (*ops.Ops, error) {
	s, err := e.zk()
	if err != nil {
		return nil, err
	}
	st, err := e.queues()
	if err != nil {
		return nil, err
	}
	return ops.New(ops.Config{ZK: s, Store: st, Cluster: e.cfg.Cluster, MemberToken: e.cfg.Ctl.Token})
}

// opsRun is ctlRun for a command built on package ops: body gets the
// operations over the command's ZooKeeper session and queue store, opened
// (and their failure returned) before it runs.
func (a *app) opsRun(body func(e *ctlEnv, o *ops.Ops, args []string) error) func(*cobra.Command, []string) error {
	return ctlRunOn(a, func(e *ctlEnv, _ []string) (*ops.Ops, error) { return e.ops() }, body)
}

// zkRun is ctlRun for a command that needs only the ZooKeeper session:
// body gets it, opened (and its failure returned) before it runs.
func (a *app) zkRun(body func(e *ctlEnv, s *coordinator.Session, args []string) error) func(*cobra.Command, []string) error {
	return ctlRunOn(a, func(e *ctlEnv, _ []string) (*coordinator.Session, error) { return e.zk() }, body)
}

// opsError maps package ops' errors to ctl's exit codes.
func opsError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ops.ErrBadInput):
		return usageError{err}
	case errors.Is(err, ops.ErrRefused):
		return refusedError{err}
	case errors.Is(err, ops.ErrUnreachable):
		return unreachableError{err}
	}
	return err
}

func (a *app) ctlMessagesCommand() *cobra.Command {
	cmd := groupCommand("messages", "List a queue's pending, delayed or dead messages, or show one by id")
	cmd.Long = `Browse a queue's messages: pending (in the log after the committed offset,
in position order), delayed (scheduled jobs and retries, soonest first) or
dead (newest first), and show one message by id wherever it is.`
	cmd.Example = `  drover ctl messages ls emails --state delayed
  drover ctl messages show emails 01HZX3…`
	var (
		state string
		after int64
		pg    *page
	)
	ls := &cobra.Command{
		Use:   "ls <queue>",
		Short: "List pending (default), delayed or dead messages",
		Example: `  drover ctl messages ls emails
  drover ctl messages ls emails --state delayed --limit 20
  drover ctl messages ls emails --after 1714557600000000 -o json`,
		Args:              exactArgs(1, "<queue>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			if err := pg.check(); err != nil {
				return err
			}
			var (
				msgs []ops.Message
				err  error
			)
			switch state {
			case "pending":
				msgs, err = o.Messages().Pending(e.ctx, args[0], drover.Position(after), pg.limit)
			case "delayed":
				msgs, err = o.Messages().Delayed(e.ctx, args[0], pg.offset, pg.limit)
			case "dead":
				msgs, err = o.Messages().Dead(e.ctx, args[0], pg.offset, pg.limit)
			default:
				return usagef("--state %q: want pending, delayed or dead", state)
			}
			if err != nil {
				return opsError(err)
			}
			if e.json {
				if msgs == nil {
					msgs = []ops.Message{}
				}
				return writeJSON(e.a.stdout, msgs)
			}
			t := newTable(e.a.stdout, "ID", "STATE", "POSITION/DUE", "TASK", "ATTEMPT", "ERROR")
			for _, m := range msgs {
				t.row(m.ID, m.State, whereOf(m), envField(m, "task"), envField(m, "attempt"), failureOf(m))
			}
			return t.flush()
		}),
	}
	f := ls.Flags()
	f.StringVar(&state, "state", "pending", "pending, delayed or dead")
	pg = pageFlags(f, 50, "the most messages to list (1 to 500)", "delayed and dead: skip this many")
	f.Int64Var(&after, "after", 0, "pending: list after this position (default: the committed offset)")
	_ = ls.RegisterFlagCompletionFunc("state", fixedCompletion("pending", "delayed", "dead"))

	show := &cobra.Command{
		Use:               "show <queue> <id>",
		Short:             "Show one message by id: its state and envelope",
		Example:           "  drover ctl messages show emails 01HZX3…\n  drover ctl messages show emails sched:nightly:1714557600 -o json",
		Args:              exactArgs(2, "<queue> <id>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			m, err := o.Messages().Message(e.ctx, args[0], args[1])
			if err != nil {
				return opsError(err)
			}
			if e.json {
				return writeJSON(e.a.stdout, m)
			}
			e.printf("ID        %s\nSTATE     %s\n", m.ID, m.State)
			if w := whereOf(m); w != "" {
				e.printf("WHERE     %s\n", w)
			}
			if m.Done {
				e.printf("DONE      yes (at or below the committed offset, kept by retention)\n")
			}
			if f := m.Failure; f != nil {
				e.printf("FAILED    %s exit %d: %s\n", fmtTime(f.FailedAt), f.ExitCode, f.Reason)
				if f.StderrTail != "" {
					e.printf("STDERR    %s\n", strings.ReplaceAll(strings.TrimSpace(f.StderrTail), "\n", "\n          "))
				}
			}
			if len(m.Envelope) > 0 {
				e.printf("ENVELOPE  %s\n", m.Envelope)
			} else if m.Raw != "" {
				e.printf("RAW       %s\n", m.Raw)
			}
			return nil
		}),
	}
	cmd.AddCommand(ls, show)
	return cmd
}

func (a *app) ctlRunNowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "run-now <queue> <id>",
		Short: "Move a delayed job into the queue at once, so that it runs next",
		Long: `Move a delayed message (a job enqueued with --at/--in, or a retry waiting
for its backoff) into the queue's log with a fresh position, atomically,
and wake the queue's owner. Exit 3 when the id is not delayed (unknown,
revoked, or promoted already).`,
		Example:           "  drover ctl run-now emails 01HZX3…",
		Args:              exactArgs(2, "<queue> <id>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			pos, err := o.Messages().RunNow(e.ctx, args[0], args[1])
			e.audit("delayed.run_now", "/queues/"+args[0]+"/delayed/"+args[1]+"/run", "", err)
			if err != nil {
				return opsError(e.queueHint(args[0], err))
			}
			return e.report(map[string]any{"queue": args[0], "id": args[1], "position": pos}, "moved %s into %s at position %d\n", args[1], args[0], pos)
		}),
	}
}

func (a *app) ctlScheduleTriggerCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "trigger <name>",
		Short: "Enqueue one job of a schedule now, outside its slots",
		Long: `Enqueue the schedule's task with its arguments into its queue now, under
the id sched:<name>:manual-<unix ms>. The schedule's next slot does not
change. An invalid entry cannot be triggered (exit 5).`,
		Example: "  drover ctl schedule trigger nightly-report",
		Args:    exactArgs(1, "<name>"),
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			res, err := o.Schedules().Trigger(e.ctx, args[0])
			e.audit("schedule.trigger", "/schedules/"+args[0]+"/trigger", "id="+res.ID, err)
			if err != nil {
				return opsError(err)
			}
			return e.report(map[string]any{"schedule": args[0], "id": res.ID, "position": res.Position}, "triggered %s: enqueued %s at position %d\n", args[0], res.ID, res.Position)
		}),
	}
}

// whereOf is a message's position or due time, for the table.
func whereOf(m ops.Message) string {
	switch {
	case m.Due != nil:
		return "due " + m.Due.UTC().Format(time.RFC3339)
	case m.Position > 0:
		return strconv.FormatInt(int64(m.Position), 10) + " (" + posTime(m.Position).Format("15:04:05.000") + ")"
	}
	return ""
}

func envField(m ops.Message, k string) string {
	var env map[string]any
	if err := json.Unmarshal(m.Envelope, &env); err != nil {
		return ""
	}
	switch v := env[k].(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

func failureOf(m ops.Message) string {
	if m.Failure == nil {
		return ""
	}
	r := m.Failure.Reason
	if len(r) > 60 {
		r = r[:60] + "…"
	}
	return r
}
