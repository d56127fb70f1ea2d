package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/scheduler"
)

// scheduleJSON is one entry as -o json prints it: the console's JSON of
// it (ops.Schedule). Definition is the definition's JSON, or a JSON string
// holding the stored text when that is not JSON; Error says why an invalid
// entry is invalid.
type scheduleJSON = ops.Schedule

// scheduleOf is en as -o json prints it.
func scheduleOf(en scheduler.Entry) scheduleJSON { return ops.ScheduleOf(en) }

// overdueAfter is how far in the past a NEXT must be for ls to ask
// whether a scheduler leads: a leader fires within scheduler.poll_interval.
const overdueAfter = 5 * time.Second

// noteNoScheduler writes a note to stderr when entries wait for a leader
// (a scheduled entry's next fire well in the past, or an entry still
// planning) and no scheduler leads (or ZooKeeper cannot tell): NEXT in the
// past then means "nothing fires", not "firing now". ZooKeeper is asked
// only in that case, so ls needs just Redis otherwise.
func noteNoScheduler(e *ctlEnv, entries []scheduler.Entry) {
	overdue := 0
	for _, en := range entries {
		if en.State == scheduler.StatePlanning || en.State == scheduler.StateScheduled && time.Since(en.Next) > overdueAfter {
			overdue++
		}
	}
	if overdue == 0 {
		return
	}
	s, err := e.zk()
	var leader string
	if err == nil {
		leader, err = ops.LeaderName(e.ctx, s, coordinator.ElectionScheduler)
	}
	switch {
	case err != nil:
		fmt.Fprintf(e.a.stderr, "note: %d schedule(s) wait for a scheduler, and whether one leads is unknown: %v\n", overdue, err)
	case leader == "":
		fmt.Fprintf(e.a.stderr, "note: no scheduler is leading: %d schedule(s) wait, and nothing fires until `drover scheduler` (or `drover worker --scheduler`) runs\n", overdue)
	}
}

// scheduleRun is ctlRun for a command on the schedules: body gets the
// schedule management API (manager), opened before it runs.
func (a *app) scheduleRun(body func(e *ctlEnv, m *scheduler.Manager, args []string) error) func(*cobra.Command, []string) error {
	return ctlRunOn(a, func(e *ctlEnv, _ []string) (*scheduler.Manager, error) { return e.manager() }, body)
}

// manager returns the schedule management API over Redis.
func (e *ctlEnv) manager() (*scheduler.Manager, error) {
	st, err := e.queues()
	if err != nil {
		return nil, err
	}
	return scheduler.NewManager(st.Schedules()), nil
}

// describeSpec prints a schedule's timing for people, as the console does
// (ops.DescribeSpec), except that a missing "at" time (an invalid stored
// entry) reads "-" as every missing time in ctl does.
func describeSpec(s scheduler.Spec) string {
	if s.Type == scheduler.TypeAt && s.At.IsZero() {
		return "at " + fmtTime(s.At)
	}
	return ops.DescribeSpec(s)
}

func (a *app) ctlScheduleCommand() *cobra.Command {
	cmd := groupCommand("schedule", "Add, list, show, remove, enable and disable schedules")
	cmd.Long = `Schedules fire tasks into queues: every interval, on a crontab line in a
time zone, or once at a time. They live in Redis (drover:schedule and
drover:sched:<name>); the elected scheduler fires them, never twice per slot.`
	cmd.Example = `  drover ctl schedule add heartbeat --queue hello --task greet --every 30s
  drover ctl schedule add nightly --queue reports --task build --cron "5 4 * * *" --tz Europe/Berlin
  drover ctl schedule add launch --queue emails --task announce --at 2030-01-02T09:00:00Z
  drover ctl schedule ls
  drover ctl schedule disable nightly`

	var (
		q, task, cronExpr, tz, catchup, file string
		args                                 *json.RawMessage
		at                                   *time.Time
		every, jitter                        *durationValue
		relative, disabled, replace, force   bool
	)
	add := &cobra.Command{
		Use:   "add <name> --queue Q --task T (--every D | --cron EXPR | --at TIME)",
		Short: "Add a schedule (or replace one with --replace)",
		Long: `Add a schedule. Give the timing with exactly one of --every (an interval;
--relative measures it from the last run instead of aligning it to the
clock), --cron (five fields, or six with seconds, or @daily and friends;
--tz names the time zone, default UTC) or --at (once). --catchup says what
happens to slots missed while no scheduler ran: once (default), skip, all.
-f reads the definition JSON of docs/scheduler.md instead.`,
		Example: `  drover ctl schedule add heartbeat --queue hello --task greet --every 30s --args '{"who":"cron"}'
  drover ctl schedule add nightly --queue reports --task build --cron "5 4 * * mon-fri" --tz Europe/Berlin --catchup skip
  drover ctl schedule add nightly -f nightly.json --replace`,
		Args: exactArgs(1, "<name>"),
		RunE: a.ctlRun(func(e *ctlEnv, pos []string) error {
			var def scheduler.Definition
			if file != "" {
				data, err := readFileFlag(file, e.a.stdin)
				if err != nil {
					return err
				}
				// Decode only: the name may come from the argument, and
				// Validate runs below.
				if err := json.Unmarshal(data, &def); err != nil {
					return usageError{fmt.Errorf("-f %s: %w", file, err)}
				}
				if def.Name == "" {
					def.Name = pos[0]
				}
				if def.Name != pos[0] {
					return usagef("-f %s names schedule %q, not %q", file, def.Name, pos[0])
				}
			} else {
				def = scheduler.Definition{Name: pos[0], Queue: q, Task: task, Disabled: disabled, Catchup: scheduler.Catchup(catchup)}
				def.Args = *args
				def.Jitter = jitter.d
				n := 0
				if every.given {
					n++
					def.Schedule = scheduler.Spec{Type: scheduler.TypeInterval, Every: every.d, Relative: relative}
				}
				if cronExpr != "" {
					n++
					def.Schedule = scheduler.Spec{Type: scheduler.TypeCron, Expr: cronExpr, Timezone: tz}
				}
				if !at.IsZero() {
					n++
					def.Schedule = scheduler.Spec{Type: scheduler.TypeAt, At: *at}
				}
				if n != 1 {
					return usagef("schedule add: give exactly one of --every, --cron or --at (or -f)")
				}
				if tz != "" && cronExpr == "" {
					return usagef("--tz goes with --cron")
				}
			}
			if err := def.Validate(); err != nil {
				return usageError{err}
			}
			if !force {
				if err := e.knownQueue(def.Queue); err != nil {
					return err
				}
			}
			o, err := e.ops()
			if err != nil {
				return err
			}
			// The console's path (ops.Schedules) and its audit record.
			verb := "added"
			if replace {
				if _, gerr := o.Schedules().Get(e.ctx, def.Name); gerr == nil {
					verb = "replaced"
				}
				err = o.Schedules().Put(e.ctx, def)
			} else {
				err = o.Schedules().Add(e.ctx, def)
			}
			e.audit("schedule.put", "/schedules/"+def.Name, verb+" "+def.Queue+"/"+def.Task, err)
			if errors.Is(err, scheduler.ErrExists) {
				return refusedError{fmt.Errorf("%w (pass --replace to change it)", err)}
			}
			if err != nil {
				return opsError(err)
			}
			if e.json {
				en, err := o.Schedules().Get(e.ctx, def.Name)
				if err != nil {
					return err
				}
				return writeJSON(e.a.stdout, en)
			}
			e.printf("%s schedule %s: %s → %s/%s\n", verb, def.Name, describeSpec(def.Schedule), def.Queue, def.Task)
			return nil
		}),
	}
	f := add.Flags()
	f.StringVar(&q, "queue", "", "the queue to enqueue to")
	f.StringVar(&task, "task", "", "the task name")
	args = argsFlag(f, "the task's arguments, JSON")
	every = durationFlag(f, "every", time.Second, "30s, 5m or 1h", "fire every interval, e.g. 30s, 15m, 24h")
	f.BoolVar(&relative, "relative", false, "measure --every from the last run")
	f.StringVar(&cronExpr, "cron", "", `a crontab line, e.g. "5 4 * * mon"`)
	f.StringVar(&tz, "tz", "", "the time zone of --cron, e.g. Europe/Berlin (default UTC)")
	at = atFlag(f, "fire once at this time (RFC 3339, or YYYY-MM-DD HH:MM[:SS] local)")
	f.StringVar(&catchup, "catchup", "", "missed slots: once (default), skip or all")
	jitter = durationFlag(f, "jitter", 0, "30s", "delay every fire by up to this much (whole seconds)")
	f.BoolVar(&disabled, "disabled", false, "add it disabled")
	f.BoolVar(&replace, "replace", false, "replace a schedule of that name")
	f.BoolVar(&force, "force", false, "accept a queue nobody configured or used")
	f.StringVarP(&file, "file", "f", "", "read the definition JSON from a file (- for stdin)")
	_ = add.RegisterFlagCompletionFunc("queue", a.completeQueues)
	_ = add.RegisterFlagCompletionFunc("catchup", fixedCompletion("once", "skip", "all"))

	ls := &cobra.Command{
		Use:     "ls",
		Short:   "List the schedules with their state, next fire and run count",
		Example: "  drover ctl schedule ls",
		Args:    noArgs,
		RunE: a.scheduleRun(func(e *ctlEnv, m *scheduler.Manager, _ []string) error {
			entries, err := m.List(e.ctx)
			if err != nil {
				return err
			}
			noteNoScheduler(e, entries)
			if e.json {
				out := make([]scheduleJSON, len(entries))
				for i, en := range entries {
					out[i] = scheduleOf(en)
				}
				return writeJSON(e.a.stdout, out)
			}
			t := newTable(e.a.stdout, "NAME", "QUEUE", "TASK", "SCHEDULE", "STATE", "NEXT", "LAST", "RUNS")
			for _, en := range entries {
				if en.State == scheduler.StateInvalid {
					// The reason goes where the schedule would: which field
					// is at fault (show prints it whole).
					reason := "invalid"
					if en.Err != nil {
						reason = oneLine(en.Err.Error(), 60)
					}
					t.row(en.Name, "", "", reason, en.State, "", "", en.Meta.TotalRunCount)
					continue
				}
				d := en.Definition
				t.row(d.Name, d.Queue, d.Task, describeSpec(d.Schedule), en.State, fmtTime(en.Next), fmtTime(en.Meta.LastFire), en.Meta.TotalRunCount)
			}
			return t.flush()
		}),
	}

	show := &cobra.Command{
		Use:               "show <name>",
		Short:             "Print one schedule: definition, state and run metadata, as JSON",
		Example:           "  drover ctl schedule show nightly",
		Args:              exactArgs(1, "<name>"),
		ValidArgsFunction: a.completeSchedules,
		RunE: a.scheduleRun(func(e *ctlEnv, m *scheduler.Manager, pos []string) error {
			en, err := m.Get(e.ctx, pos[0])
			if err != nil {
				return err
			}
			return writeJSON(e.a.stdout, scheduleOf(en))
		}),
	}

	// simple is a command on one schedule through the console's path
	// (ops.Schedules), audited with the console's action and target.
	simple := func(verb, short, action, suffix string, do func(sc ops.Schedules, e *ctlEnv, name string) error) *cobra.Command {
		return &cobra.Command{
			Use:               verb + " <name>",
			Short:             short,
			Example:           "  drover ctl schedule " + verb + " nightly",
			Args:              exactArgs(1, "<name>"),
			ValidArgsFunction: a.completeSchedules,
			RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, pos []string) error {
				err := do(o.Schedules(), e, pos[0])
				e.audit(action, "/schedules/"+pos[0]+suffix, "", err)
				if err != nil {
					return opsError(err)
				}
				return e.report(map[string]any{"name": pos[0], "done": verb}, "%s: %s\n", verb, pos[0])
			}),
		}
	}
	rm := simple("rm", "Remove a schedule (jobs it enqueued stay)", "schedule.remove", "",
		func(sc ops.Schedules, e *ctlEnv, n string) error { return sc.Remove(e.ctx, n) })
	enable := simple("enable", "Let a disabled schedule fire again, from its next slot", "schedule.enable", "/enable",
		func(sc ops.Schedules, e *ctlEnv, n string) error { return sc.SetEnabled(e.ctx, n, true) })
	disable := simple("disable", "Stop a schedule from firing without removing it", "schedule.disable", "/disable",
		func(sc ops.Schedules, e *ctlEnv, n string) error { return sc.SetEnabled(e.ctx, n, false) })
	cmd.AddCommand(add, ls, show, rm, enable, disable)
	return cmd
}
