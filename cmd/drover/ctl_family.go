package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/ops"
)

// ctlFamilyCommand manages queue families: configurations that apply to
// every queue whose name starts with a prefix (docs/one-queue-per-key.md).
func (a *app) ctlFamilyCommand() *cobra.Command {
	cmd := groupCommand("family", "Create, list, show and remove queue families")
	cmd.Long = `A queue family is a queue configuration for every queue whose name starts
with its prefix: such a queue runs from its first enqueue (from any
producer), with no 'queue create'. The rebalance leader registers it with
the family's configuration; a queue created on its own keeps its own. With
--retire-after, a queue of the family that stays empty and idle that long
is removed from the registry (its next enqueue registers it again). With
--max-queues, the console's producer API refuses (409) a new key of a
family that holds that many keys it admitted (default 100000).
Families live in ZooKeeper at /families/<name>; every change is audited.`
	cmd.Example = `  drover ctl family create customers --prefix customer- --ordered --on-failure park \
      --rate-limit 5 --retire-after 24h --task '*=/usr/local/bin/handle-customer'
  drover ctl family ls
  drover ctl family show customers
  drover ctl family rm customers`

	var cf queueFlags
	var (
		prefix      string
		retireAfter *durationValue
		maxQueues   int
	)
	var replace bool
	create := &cobra.Command{
		Use:   "create <name> --prefix <prefix>",
		Short: "Create a queue family (or replace one with --replace)",
		Long: `Create a family: the queue flags (as for 'queue create') configure every
queue whose name starts with --prefix. When several families match a
queue, the longest prefix wins. --replace changes an existing family and
the queues it registered: each queue whose configuration is still the
family's previous one gets the new one; a queue changed on its own ('queue
update') keeps its configuration. The output (and the audit entry) counts
both.`,
		Example: `  drover ctl family create customers --prefix customer- --concurrency 2 --task '*=/usr/local/bin/handle'
  drover ctl family create devices --prefix dev- -f device-queue.json --retire-after 168h
  drover ctl family create customers --prefix customer- --rate-limit 10 --task '*=@go' --replace`,
		Args: exactArgs(1, "<name>"),
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			f := drover.FamilyConfig{Name: args[0], Prefix: prefix}
			version := int32(-1)
			if replace {
				cur, err := o.Families().Get(e.ctx, args[0])
				if err != nil {
					return err
				}
				version = cur.Version
				if !e.cmdFlags.Changed("prefix") {
					f.Prefix = cur.Config.Prefix
				}
				if !e.cmdFlags.Changed("max-queues") {
					maxQueues = cur.Config.MaxQueues
				}
			}
			if f.Prefix == "" {
				return usagef("--prefix is required: the start of the names of the family's queues")
			}
			f.RetireAfter = drover.Duration(retireAfter.d)
			f.MaxQueues = maxQueues
			f.Queue.Name = f.Prefix
			if err := cf.apply(e.cmdFlags, e.a.stdin, &f.Queue); err != nil {
				return err
			}
			if err := f.Validate(); err != nil {
				return usageError{err}
			}
			var change coordinator.FamilyChange
			var err error
			if replace {
				change, err = o.Families().Replace(e.ctx, f, version)
			} else {
				_, err = o.Families().Set(e.ctx, f, version)
			}
			verb := map[bool]string{false: "create ", true: "update "}[replace]
			detail, _ := json.Marshal(f)
			detail = append([]byte(verb), detail...)
			if replace {
				// The counts too when the queues were updated in part.
				detail = fmt.Appendf(detail, " queues_updated=%d queues_kept=%d", change.Updated, change.Kept)
			}
			e.audit("family.set", "/families/"+f.Name, string(detail), err) // the console's action and target
			if err != nil {
				return refusedOf(err)
			}
			if e.json {
				if replace {
					return writeJSON(e.a.stdout, familyReplaced{f, change.Updated, change.Kept})
				}
				return writeJSON(e.a.stdout, f)
			}
			if !replace {
				e.printf("created family %s: queues named %s* run with its configuration (task routes: %s)\n", f.Name, f.Prefix, taskNames(f.Queue))
				return nil
			}
			e.printf("replaced family %s: queues named %s* run with its configuration (task routes: %s)\n", f.Name, f.Prefix, taskNames(f.Queue))
			e.printf("registered queues: %d updated, %d kept their own configuration\n", change.Updated, change.Kept)
			return nil
		}),
	}
	cf.register(create, false)
	create.Flags().StringVar(&prefix, "prefix", "", "the start of the names of the family's queues (required)")
	retireAfter = durationFlag(create.Flags(), "retire-after", 0, "24h", "retire a queue of the family after it has been empty and idle this long, e.g. 24h (default: never)")
	create.Flags().IntVar(&maxQueues, "max-queues", 0, fmt.Sprintf("the most keys HTTP producers may bring into the family; a new key beyond it is refused with 409 (default %d; --replace keeps the family's)", drover.DefaultFamilyMaxQueues))
	create.Flags().BoolVar(&replace, "replace", false, "replace an existing family")

	ls := &cobra.Command{
		Use:     "ls",
		Short:   "List the queue families",
		Example: "  drover ctl family ls\n  drover ctl family ls -o json",
		Args:    noArgs,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			fams, err := o.Families().List(e.ctx)
			if err != nil {
				return err
			}
			if e.json {
				out := make([]drover.FamilyConfig, 0, len(fams))
				for _, f := range fams {
					out = append(out, f.Config)
				}
				return writeJSON(e.a.stdout, out)
			}
			t := newTable(e.a.stdout, "FAMILY", "PREFIX", "CONCURRENCY", "ORDERED", "RATE", "ON-FAILURE", "RETIRE-AFTER", "TASKS")
			for _, f := range fams {
				if f.Err != nil {
					t.row(f.Config.Name, "", "", "", "", "", "", "invalid: "+oneLine(f.Err.Error(), 50))
					continue
				}
				c := f.Config.Queue.WithDefaults()
				rate, retire := "-", "never"
				if c.RateLimit.Enabled() {
					rate = fmt.Sprintf("%g/s", c.RateLimit.PerSecond)
				}
				if f.Config.RetireAfter > 0 {
					retire = f.Config.RetireAfter.Std().String()
				}
				t.row(f.Config.Name, f.Config.Prefix+"*", c.Concurrency, c.Ordered, rate, cmpOr(c.OnFailure, drover.OnFailureDeadLetter), retire, taskNames(c))
			}
			return t.flush()
		}),
	}

	show := &cobra.Command{
		Use:     "show <name>",
		Short:   "Print one queue family as JSON (as stored)",
		Example: "  drover ctl family show customers > customers.json",
		Args:    exactArgs(1, "<name>"),
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			f, err := o.Families().Get(e.ctx, args[0])
			if err != nil {
				return err
			}
			return writeJSON(e.a.stdout, f.Config)
		}),
	}

	rm := &cobra.Command{
		Use:   "rm <name>",
		Short: "Remove a queue family (its queues stay configured)",
		Long: `Remove /families/<name>. New names under its prefix are no longer
registered; the queues it registered stay configured and keep running
(they are retired no more: remove them with 'queue rm').`,
		Example: "  drover ctl family rm customers",
		Args:    exactArgs(1, "<name>"),
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			err := o.Families().Delete(e.ctx, args[0])
			e.audit("family.delete", "/families/"+args[0], "", err)
			if err != nil {
				return err
			}
			return e.report(map[string]any{"family": args[0], "removed": true}, "removed family %s\n", args[0])
		}),
	}
	cmd.AddCommand(create, ls, show, rm)
	return cmd
}

// familyReplaced is what `family create --replace -o json` prints: the
// family and what became of its registered queues.
type familyReplaced struct {
	drover.FamilyConfig
	QueuesUpdated int `json:"queues_updated"`
	QueuesKept    int `json:"queues_kept"`
}

// cmpOr returns s, or def when s is empty.
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
