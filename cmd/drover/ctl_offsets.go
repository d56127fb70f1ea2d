package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
)

// offsetReport is one queue's offset as `offsets show` prints it.
type offsetReport struct {
	Queue       string          `json:"queue"`
	Position    drover.Position `json:"position"`
	ID          string          `json:"id,omitempty"`
	CommittedAt time.Time       `json:"committed_at"`
	Member      string          `json:"member,omitempty"`
	Version     int32           `json:"version"` // the fencing token
	Owner       string          `json:"owner,omitempty"`
	First       drover.Position `json:"log_first"`
	Last        drover.Position `json:"log_end"`
	Lag         int64           `json:"lag"`
	Retention   string          `json:"retention"`
}

func (a *app) ctlOffsetsCommand() *cobra.Command {
	cmd := groupCommand("offsets", "Show committed offsets, or reset one to replay or skip")
	cmd.Long = `A queue's offset is its committed position: everything at or below it is
done. Positions are microseconds since the epoch (Redis's clock), so a time
names a position. Resetting an offset back replays the messages after it
that the queue's retention kept; resetting it forward skips messages.`
	cmd.Example = `  drover ctl offsets show
  drover ctl pause --queue emails --reason replay
  drover ctl offsets reset emails --to-datetime "2024-05-01 10:00"   # replay from then (paused queues only)
  drover ctl offsets reset emails --to-latest                        # skip the backlog
  drover ctl resume --queue emails`
	show := &cobra.Command{
		Use:               "show [<queue>...]",
		Short:             "Show the committed offsets (every queue when none is named)",
		Example:           "  drover ctl offsets show\n  drover ctl offsets show emails -o json",
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.ctlRun(func(e *ctlEnv, args []string) error {
			names := args
			if len(names) == 0 {
				rep, err := e.status(e.ctx)
				if err != nil {
					return err
				}
				for _, q := range rep.Queues {
					names = append(names, q.Queue)
				}
			}
			var out []offsetReport
			for _, q := range names {
				r, err := e.offsetOf(q)
				if err != nil {
					return err
				}
				out = append(out, r)
			}
			if e.json {
				if out == nil {
					out = []offsetReport{}
				}
				return writeJSON(e.a.stdout, out)
			}
			t := newTable(e.a.stdout, "QUEUE", "COMMITTED", "AT", "BY", "VERSION", "OWNER", "LOG-FIRST", "LOG-END", "LAG", "RETENTION")
			for _, r := range out {
				t.row(r.Queue, fmtPos(r.Position), fmtTime(r.CommittedAt), r.Member, r.Version, r.Owner, fmtPos(r.First), fmtPos(r.Last), r.Lag, r.Retention)
			}
			return t.flush()
		}),
	}
	cmd.AddCommand(show, a.offsetsResetCommand())
	return cmd
}

// offsetOf reads one queue's offset, owner and log ends.
func (e *ctlEnv) offsetOf(q string) (offsetReport, error) {
	if err := e.knownQueue(q); err != nil {
		return offsetReport{}, err
	}
	s, _ := e.zk()
	st, err := e.queues()
	if err != nil {
		return offsetReport{}, err
	}
	r := offsetReport{Queue: q, Retention: "0s"}
	off, err := s.Claims().Offset(e.ctx, q)
	if err != nil && !errors.Is(err, drover.ErrNotFound) {
		return r, err
	}
	r.Position, r.ID, r.CommittedAt, r.Member, r.Version = off.Offset.Position, off.Offset.ID, off.Offset.CommittedAt, off.Offset.Member, off.Version
	if on, err := s.Claims().Owner(e.ctx, q); err == nil {
		r.Owner = on.Owner.Member
	}
	if qe, err := s.Queues().Get(e.ctx, q); err == nil {
		r.Retention = qe.Config.Retention.Std().String()
	}
	if p, err := st.Inspector().FirstPosition(e.ctx, q); err == nil {
		r.First = p
	}
	if p, err := st.Inspector().LastPosition(e.ctx, q); err == nil {
		r.Last = p
	}
	b, err := st.Log().Backlog(e.ctx, q, r.Position)
	if err != nil {
		return r, err
	}
	r.Lag = b.Lag
	return r, nil
}

func (a *app) offsetsResetCommand() *cobra.Command {
	var (
		earliest, latest, dryRun bool
		datetime, position       string
	)
	cmd := &cobra.Command{
		Use:   "reset <queue> (--to-earliest | --to-latest | --to-datetime TIME | --to-position P)",
		Short: "Move a queue's offset to replay or skip messages",
		Long: `Set a queue's committed offset:

  --to-earliest     replay every message still in the log (retention)
  --to-latest       skip everything enqueued so far
  --to-datetime T   replay the messages enqueued at or after T (RFC 3339 or
                    YYYY-MM-DD HH:MM[:SS] local time), skip older ones
  --to-position P   set the position itself

Refused (exit 5) while a member owns the queue, unless the queue (or its
owner, or everything) is paused: pause it first. The owner then notices the
reset (its next commit is fenced), stops the queue and claims it again from
the new offset; resume to run it. Only messages inside the queue's
retention window can be replayed: with retention 0, done messages are
trimmed at once.`,
		Example: `  drover ctl pause --queue emails --reason replay
  drover ctl offsets reset emails --to-datetime 2024-05-01T10:00:00Z
  drover ctl resume --queue emails`,
		Args:              exactArgs(1, "<queue>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			q := args[0]
			n := 0
			for _, set := range []bool{earliest, latest, datetime != "", position != ""} {
				if set {
					n++
				}
			}
			if n != 1 {
				return usagef("offsets reset: give exactly one of --to-earliest, --to-latest, --to-datetime, --to-position")
			}
			target := ops.ResetTarget{Earliest: earliest, Latest: latest}
			if datetime != "" {
				t, err := parseTime(datetime)
				if err != nil {
					return usagef("--to-datetime: %v", err)
				}
				target.Time = t
			}
			if position != "" {
				p, err := strconv.ParseInt(position, 10, 64)
				if err != nil || p < 0 {
					return usagef("--to-position %q: want a position ≥ 0", position)
				}
				pos := drover.Position(p)
				target.Position = &pos
			}
			// The console's path (ops.Queues.ResetOffset): the same refusal while
			// owned and not paused, and the replayed messages' recorded
			// starts forgotten, so a replay runs each with every attempt.
			p, err := o.Queues().ResetOffset(e.ctx, q, target, operator(), dryRun)
			if !dryRun {
				e.audit("offset.reset", "/queues/"+q+"/offset", fmt.Sprintf("from %d to %d", p.From, p.To), err)
			}
			if err != nil {
				if errors.Is(err, ops.ErrRefused) {
					return refusedError{fmt.Errorf("%w: drover ctl pause --queue %s", err, q)}
				}
				return e.queueHint(q, err) // ops checked the queue: ctl adds how to create it
			}
			result := map[string]any{"queue": q, "from": p.From, "to": p.To, "lag": p.Run, "dry_run": dryRun}
			if !dryRun {
				result["version"] = p.Version
			}
			if e.json {
				return writeJSON(e.a.stdout, result)
			}
			verb := "reset"
			if dryRun {
				verb = "would reset"
			}
			e.printf("%s offset of %s from %s to %s: %d message(s) to run\n", verb, q, fmtPos(p.From), fmtPos(p.To), p.Run)
			if p.Warning != "" && p.To < p.From {
				fmt.Fprintf(e.a.stderr, "note: %s: %s\n", q, p.Warning)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&earliest, "to-earliest", false, "replay everything still in the log")
	f.BoolVar(&latest, "to-latest", false, "skip everything enqueued so far")
	f.StringVar(&datetime, "to-datetime", "", "replay what was enqueued at or after this time")
	f.StringVar(&position, "to-position", "", "set this position")
	f.BoolVar(&dryRun, "dry-run", false, "print what would change, change nothing")
	return cmd
}
