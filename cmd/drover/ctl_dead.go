package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/queue"
)

// deadJSON is one dead letter as -o json prints it.
type deadJSON struct {
	ID       string          `json:"id"`
	Task     string          `json:"task,omitempty"`
	Attempt  int             `json:"attempt"`
	Args     json.RawMessage `json:"args,omitempty"`
	Envelope *drover.Message `json:"envelope,omitempty"`
	Raw      string          `json:"raw_envelope,omitempty"`
	Failure  drover.Failure  `json:"failure"`
}

func deadOf(dl drover.DeadLetter) deadJSON {
	d := deadJSON{ID: dl.ID, Envelope: dl.Message, Failure: dl.Failure}
	if dl.Message != nil {
		d.Task, d.Attempt, d.Args = dl.Message.Task, dl.Message.Attempt, dl.Message.Args
	} else {
		d.Raw = string(dl.Raw)
	}
	return d
}

func (a *app) ctlDeadCommand() *cobra.Command {
	cmd := groupCommand("dead", "List, show, retry and purge dead letters")
	cmd.Long = `Dead letters are messages that failed max_attempts times (or could not be
decoded). They keep the envelope, the error, the exit code and the tail of
stderr. retry puts one back at the end of its queue with attempt 0; purge
deletes it.`
	cmd.Example = `  drover ctl dead ls emails
  drover ctl dead show emails 01HX…
  drover ctl dead retry emails --all
  drover ctl dead purge emails 01HX… 01HY…`

	var pg *page
	ls := &cobra.Command{
		Use:               "ls <queue>",
		Short:             "List dead letters, newest first",
		Example:           "  drover ctl dead ls emails --limit 20",
		Args:              exactArgs(1, "<queue>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.ctlRun(func(e *ctlEnv, args []string) error {
			if err := pg.check(); err != nil {
				return err
			}
			st, err := e.knownQueueStore(args[0])
			if err != nil {
				return err
			}
			dls, err := st.Dead().DeadLetters(e.ctx, args[0], pg.offset, pg.limit)
			if err != nil {
				return err
			}
			out := make([]deadJSON, len(dls))
			for i, dl := range dls {
				out[i] = deadOf(dl)
			}
			if e.json {
				return writeJSON(e.a.stdout, out)
			}
			t := newTable(e.a.stdout, "ID", "TASK", "ATTEMPT", "EXIT", "FAILED", "ERROR")
			for _, d := range out {
				t.row(d.ID, d.Task, d.Attempt, d.Failure.ExitCode, fmtTime(d.Failure.FailedAt), oneLine(d.Failure.Reason, 60))
			}
			return t.flush()
		}),
	}
	pg = pageFlags(ls.Flags(), 100, "list at most this many", "skip this many (paging)")

	show := &cobra.Command{
		Use:               "show <queue> <id>",
		Short:             "Show one dead letter: envelope, error, exit code, stderr tail",
		Example:           "  drover ctl dead show emails 01HX…",
		Args:              exactArgs(2, "<queue> <id>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.queueRun(func(e *ctlEnv, st *queue.Store, args []string) error {
			dl, err := st.Dead().GetDeadLetter(e.ctx, args[0], args[1])
			if err != nil {
				return err
			}
			d := deadOf(dl)
			if e.json {
				return writeJSON(e.a.stdout, d)
			}
			e.printf("ID        %s\nTASK      %s\nATTEMPT   %d\nFAILED    %s\nEXIT      %d\nERROR     %s\n",
				d.ID, d.Task, d.Attempt, fmtTime(d.Failure.FailedAt), d.Failure.ExitCode, d.Failure.Reason)
			if len(d.Args) > 0 {
				e.printf("ARGS      %s\n", d.Args)
			}
			if d.Raw != "" {
				e.printf("RAW       %s\n", d.Raw)
			}
			if d.Failure.StderrTail != "" {
				e.printf("STDERR (tail)\n%s\n", strings.TrimRight(d.Failure.StderrTail, "\n"))
			}
			return nil
		}),
	}

	cmd.AddCommand(ls, show, a.deadBulkCommand("retry"), a.deadBulkCommand("purge"))
	return cmd
}

// deadBulkCommand is retry or purge: of the ids given, or of --all.
func (a *app) deadBulkCommand(verb string) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use: verb + " <queue> (<id>... | --all)",
		Short: map[string]string{
			"retry": "Put dead letters back at the end of their queue with attempt 0",
			"purge": "Delete dead letters",
		}[verb],
		Example: fmt.Sprintf("  drover ctl dead %s emails 01HX…\n  drover ctl dead %s emails --all", verb, verb),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usagef("%s: want <queue> and ids or --all", cmd.CommandPath())
			}
			if (len(args) > 1) == all {
				return usagef("%s: give ids or --all, not both or neither", cmd.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			q, ids := args[0], args[1:]
			action := "dead." + verb
			if verb == "purge" && all {
				action = "dead.purge_all"
			}
			if err := e.knownQueueAudited(q, action, "/queues/"+q+"/dead/"+verb); err != nil { // with ctl's hint
				return err
			}
			msgs := o.Messages()
			if verb == "purge" && all {
				n, err := msgs.PurgeDead(e.ctx, q, "")
				e.audit("dead.purge_all", "/queues/"+q+"/dead/purge", fmt.Sprintf("purged=%d", n), err)
				if err != nil {
					return opsError(err)
				}
				return e.report(map[string]any{"queue": q, "purged": n}, "purged %d dead letter(s) of %s\n", n, q)
			}
			if all { // retry --all: page through every dead letter
				for {
					dls, err := msgs.Dead(e.ctx, q, len(ids), ops.MaxPage)
					if err != nil {
						return opsError(err)
					}
					for _, dl := range dls {
						ids = append(ids, dl.ID)
					}
					if len(dls) < ops.MaxPage {
						break
					}
				}
			}
			done := []string{}
			var missing []string
			var failed error
			for _, id := range ids {
				var err error
				if verb == "retry" {
					_, err = msgs.RetryDead(e.ctx, q, id)
				} else {
					_, err = msgs.PurgeDead(e.ctx, q, id)
				}
				switch {
				case err == nil:
					done = append(done, id)
				case isNotFound(err):
					missing = append(missing, id)
				default:
					failed = err
				}
				if failed != nil {
					break
				}
			}
			e.auditDead(verb, q, ids, done, missing, failed)
			if failed != nil {
				return opsError(failed)
			}
			if e.json {
				if err := writeJSON(e.a.stdout, map[string]any{"queue": q, past[verb]: done, "not_found": missing}); err != nil {
					return err
				}
			} else {
				for _, id := range done {
					e.printf("%s %s\n", past[verb], id)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("%s in %s: no dead letter %s: %w", verb, q, strings.Join(missing, ", "), drover.ErrNotFound)
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&all, "all", false, "every dead letter of the queue")
	return cmd
}

// past is the participle printed for a bulk verb.
var past = map[string]string{"retry": "retried", "purge": "purged"}

// oneLine shortens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// auditDead records one dead-letter retry or purge command: the console's
// record ("dead.retry" on /queues/<q>/dead/<id>/retry) for one id, one
// record for the command with the counts and the ids for several (so that
// retry --all over thousands writes one record, not thousands that would
// push older ones out of the log).
func (e *ctlEnv) auditDead(verb, q string, ids, done, missing []string, err error) {
	target := "/queues/" + q + "/dead/" + verb
	if len(ids) == 1 {
		target = "/queues/" + q + "/dead/" + ids[0] + "/" + verb
	}
	if err == nil && len(missing) > 0 {
		err = fmt.Errorf("no dead letter %s: %w", strings.Join(missing, ", "), drover.ErrNotFound)
	}
	e.audit("dead."+verb, target, fmt.Sprintf("%s=%d ids=%s", past[verb], len(done), strings.Join(ids, ",")), err)
}
