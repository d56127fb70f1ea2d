package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/jobs"
	"github.com/drover-dev/drover/queue"
)

func (a *app) ctlJobCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "job <queue> <id>",
		Short: "Say where a job is: delayed, pending, running, retrying, parked, dead, succeeded, revoked or unknown",
		Long: `Look a job up by id and print its state with the time the answer was taken:

  delayed    enqueued for later: due at
  pending    in the queue: position, messages ahead of it
  running    on its queue's owner: member, pid, attempt, started at
  retrying   an attempt failed: attempt, next try at, last error
  parked     its ordered queue is paused at it (on_failure park, or a cancel
             that parked it): attempt, error, who parked it and when, who
             cancelled it; resolve it with drover ctl parked retry or skip
  dead       failed for good: reason, exit code, stderr tail
  succeeded  finished at, duration, attempt, exit code (from the outcome record)
  revoked    deleted while delayed
  unknown    never seen, or finished and its record expired

Redis answers everything but running, which the queue owner's admin server
(/debug/job) answers. Outcome records are kept per queue (default 24h, see
drover ctl queue ... --outcome-retention). "unknown" is an answer, not an
error: the command exits 0.`,
		Example: `  id=$(drover ctl enqueue emails send-welcome --args '{"user":42}')
  drover ctl job emails "$id"
  drover ctl job emails "$id" -o json | jq -r .state`,
		Args:              exactArgs(2, "<queue> <id>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.queueRun(func(e *ctlEnv, st *queue.Store, args []string) error {
			if args[1] == "" {
				return usagef("<id>: must not be empty")
			}
			s, err := e.zk()
			if err != nil {
				return err
			}
			lookup := &jobs.Lookup{Store: st.Jobs(), Fleet: jobs.SessionFleet{Session: s}, Token: e.cfg.Ctl.Token}
			js, err := lookup.Job(e.ctx, args[0], args[1])
			if err != nil {
				return err
			}
			if e.json {
				return writeJSON(e.a.stdout, js)
			}
			return printJob(e, js)
		}),
	}
}

// printJob prints a status as "FIELD value" lines, only the fields set.
func printJob(e *ctlEnv, js drover.JobStatus) error {
	t := newTable(e.a.stdout, "QUEUE", js.Queue)
	t.row("ID", js.ID)
	t.row("STATE", string(js.State))
	t.row("AS OF", js.AsOf.Format(time.RFC3339Nano))
	if js.Task != "" {
		t.row("TASK", js.Task)
	}
	if js.State != drover.JobUnknown && js.State != drover.JobRevoked {
		t.row("ATTEMPT", js.Attempt)
	}
	optTime := func(name string, v *time.Time) {
		if v != nil {
			t.row(name, v.Format(time.RFC3339Nano))
		}
	}
	switch js.State {
	case drover.JobDelayed:
		optTime("DUE AT", js.DueAt)
	case drover.JobRetrying:
		optTime("NEXT TRY AT", js.DueAt)
	}
	if js.Position != 0 {
		t.row("POSITION", fmtPos(js.Position))
	}
	if js.Ahead != nil {
		t.row("AHEAD", *js.Ahead)
	}
	if js.Member != "" {
		t.row("MEMBER", js.Member)
	}
	if js.PID != 0 {
		t.row("PID", js.PID)
	}
	optTime("STARTED AT", js.StartedAt)
	if js.Error != "" {
		t.row("ERROR", js.Error)
	}
	if js.ExitCode != nil {
		t.row("EXIT CODE", *js.ExitCode)
	}
	optTime("FINISHED AT", js.FinishedAt)
	if js.Duration > 0 {
		t.row("DURATION", fmtAge(time.Duration(js.Duration*float64(time.Second))))
	}
	if js.By != "" {
		t.row("BY", js.By)
	}
	if p := js.Parked; p != nil {
		t.row("PARKED", fmt.Sprintf("since %s by %s", p.At.Format(time.RFC3339Nano), p.By))
	}
	if js.Note != "" {
		t.row("NOTE", js.Note)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if js.StderrTail != "" {
		e.printf("\nSTDERR TAIL\n%s\n", js.StderrTail)
	}
	if js.StdoutTail != "" {
		e.printf("\nSTDOUT TAIL\n%s\n", js.StdoutTail)
	}
	return nil
}
