package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/ops"
)

func (a *app) ctlQueueCommand() *cobra.Command {
	cmd := groupCommand("queue", "Create, update, list, show and remove queue configurations")
	cmd.Long = `Queue configurations live in ZooKeeper at /queues/<bucket>/<name> as drover.QueueConfig
JSON. The rebalance leader assigns every configured queue to one member.
Set fields with flags or start from a JSON file (-f); update changes only
the flags given.`
	cmd.Example = `  drover ctl queue create emails --concurrency 8 --timeout 30s --task 'send=/usr/local/bin/send-mail --smtp localhost'
  drover ctl queue create resize -f resize.json
  drover ctl queue update emails --retention 24h --task 'bounce=@go'
  drover ctl queue ls
  drover ctl queue rm emails`

	var cf queueFlags
	create := &cobra.Command{
		Use:   "create <name>",
		Short: "Create a queue configuration",
		Example: `  drover ctl queue create emails --concurrency 8 --task 'send=/usr/local/bin/send-mail'
  drover ctl queue create hello --task '*=examples/tasks/hello.sh' --retention 1h`,
		Args: exactArgs(1, "<name>"),
		RunE: a.ctlRun(func(e *ctlEnv, args []string) error {
			cfg := drover.QueueConfig{Name: args[0]}
			if err := drover.ValidateQueueName(args[0]); err != nil {
				return usageError{err}
			}
			if err := cf.apply(e.cmdFlags, e.a.stdin, &cfg); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			if err := drover.CheckLabels("--tag", cfg.Tags); err != nil {
				return usageError{err}
			}
			o, err := e.ops() // after the flags are checked: a usage error needs no server
			if err != nil {
				return err
			}
			_, err = o.Queues().SetConfig(e.ctx, cfg, -1)
			e.audit("queue.config", "/queues/"+cfg.Name+"/config", "create", err)
			if err != nil {
				return opsError(err)
			}
			return e.printQueue("created", cfg, 0)
		}),
	}
	cf.register(create, false)

	var uf queueFlags
	update := &cobra.Command{
		Use:               "update <name>",
		Short:             "Change a queue configuration (only the flags given); a family's queue before its first enqueue starts from its family's",
		Example:           "  drover ctl queue update emails --concurrency 16 --rm-task old",
		Args:              exactArgs(1, "<name>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			s, err := e.zk()
			if err != nil {
				return err
			}
			// A queue of a family that has not been enqueued to yet is
			// updated from the configuration its family would register.
			entry, err := s.Queues().GetOrFamily(e.ctx, args[0])
			if err != nil && !(entry.Err != nil && uf.file != "") { // a corrupt config may be replaced with -f
				return err
			}
			cfg := entry.Config
			if err := uf.apply(e.cmdFlags, e.a.stdin, &cfg); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			if err := drover.CheckLabels("--tag", cfg.Tags); err != nil {
				return usageError{err}
			}
			// The console's path: ops writes it (version -1: a family's
			// queue not registered yet is created) and ctl audits it.
			v, err := o.Queues().SetConfig(e.ctx, cfg, max(entry.Version, -1))
			e.audit("queue.config", "/queues/"+cfg.Name+"/config", fmt.Sprintf("update version=%d", entry.Version), err)
			if errors.Is(err, coordinator.ErrQueueExists) {
				return refusedError{fmt.Errorf("%w: its family registered it meanwhile; run the update again", err)}
			}
			if errors.Is(err, coordinator.ErrConflict) {
				return refusedError{fmt.Errorf("%w: someone changed it meanwhile; run the update again", err)}
			}
			if err != nil {
				return opsError(err)
			}
			return e.printQueue("updated", cfg, v)
		}),
	}
	uf.register(update, true)

	ls := &cobra.Command{
		Use:     "ls",
		Short:   "List the queue configurations",
		Example: "  drover ctl queue ls\n  drover ctl queue ls -o json",
		Args:    noArgs,
		RunE: a.zkRun(func(e *ctlEnv, s *coordinator.Session, args []string) error {
			entries, err := s.Queues().List(e.ctx)
			if err != nil {
				return err
			}
			if e.json {
				out := make([]drover.QueueConfig, 0, len(entries))
				for _, en := range entries {
					out = append(out, en.Config)
				}
				return writeJSON(e.a.stdout, out)
			}
			t := newTable(e.a.stdout, "QUEUE", "WEIGHT", "CONCURRENCY", "ORDERED", "TIMEOUT", "ATTEMPTS", "RETENTION", "TAGS", "TASKS", "FAMILY")
			for _, en := range entries {
				if en.Err != nil {
					t.row(en.Name, "", "", "", "", "", "", "", "invalid: "+oneLine(en.Err.Error(), 50))
					continue
				}
				c := en.Config.WithDefaults()
				t.row(c.Name, c.Weight, c.Concurrency, c.Ordered, c.Timeout.Std(), c.MaxAttempts, c.Retention.Std(), strings.Join(c.Tags, ","), taskNames(c), c.Family)
			}
			return t.flush()
		}),
	}

	show := &cobra.Command{
		Use:               "show <name>",
		Short:             "Print one queue configuration as JSON (as stored; \"family\" names the family that registered it)",
		Example:           "  drover ctl queue show emails > emails.json",
		Args:              exactArgs(1, "<name>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.zkRun(func(e *ctlEnv, s *coordinator.Session, args []string) error {
			entry, err := s.Queues().Get(e.ctx, args[0])
			if err != nil {
				return err
			}
			return writeJSON(e.a.stdout, entry.Config)
		}),
	}

	rm := &cobra.Command{
		Use:   "rm <name>",
		Short: "Remove a queue configuration (messages and offset are kept)",
		Long: `Remove /queues/<bucket>/<name>. Its owner stops running it at the next
rebalance. The messages in Redis and the committed offset are kept, so
creating the queue again resumes where it stopped.`,
		Example:           "  drover ctl queue rm emails",
		Args:              exactArgs(1, "<name>"),
		ValidArgsFunction: a.completeQueueArg,
		RunE: a.opsRun(func(e *ctlEnv, o *ops.Ops, args []string) error {
			err := o.Queues().DeleteConfig(e.ctx, args[0])
			e.audit("queue.delete", "/queues/"+args[0]+"/config", "", err)
			if err != nil {
				return opsError(err)
			}
			return e.report(map[string]any{"queue": args[0], "removed": true}, "removed queue %s\n", args[0])
		}),
	}
	cmd.AddCommand(create, update, ls, show, rm)
	return cmd
}

// printQueue reports a created or updated configuration.
func (e *ctlEnv) printQueue(verb string, cfg drover.QueueConfig, version int32) error {
	if e.json {
		return writeJSON(e.a.stdout, cfg)
	}
	routes := taskNames(cfg)
	if routes == "" {
		routes = "none: only tasks with a registered Go handler run"
	}
	e.printf("%s queue %s (task routes: %s)\n", verb, cfg.Name, routes)
	return nil
}

// taskNames lists the routed task names, sorted.
func taskNames(c drover.QueueConfig) string {
	names := make([]string, 0, len(c.Tasks))
	for n := range c.Tasks {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
