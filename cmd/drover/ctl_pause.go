package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
)

func (a *app) ctlPauseCommand(pause bool) *cobra.Command {
	var (
		queues, members []string
		all             bool
		reason          string
	)
	verb := map[bool]string{true: "pause", false: "resume"}[pause]
	cmd := &cobra.Command{
		Use: verb + " (--queue Q... | --member M... | --all)",
		Short: map[bool]string{
			true:  "Stop starting tasks on a queue, a member or everything, without a rebalance",
			false: "Clear a pause flag set by pause",
		}[pause],
		Long: map[bool]string{
			true: `Set a pause flag (/pause/queues/<q>, /pause/members/<name> or /pause/all).
Owners stop starting new tasks of the paused queues (in-flight tasks
finish) and keep their claims: nothing is reassigned. A paused queue's
offset may be reset (drover ctl offsets reset).`,
			false: `Remove a pause flag set by 'drover ctl pause'. Resuming what is not paused
is not an error.`,
		}[pause],
		Example: map[bool]string{
			true: `  drover ctl pause --queue emails --reason "smtp outage"
  drover ctl pause --member worker-3 --reason "disk full"
  drover ctl pause --all --reason "maintenance"`,
			false: `  drover ctl resume --queue emails
  drover ctl resume --all`,
		}[pause],
		Args: noArgs,
		RunE: a.ctlRun(func(e *ctlEnv, args []string) error {
			scopes := 0
			for _, set := range []bool{len(queues) > 0, len(members) > 0, all} {
				if set {
					scopes++
				}
			}
			if scopes != 1 {
				return usagef("%s: give exactly one of --queue, --member or --all", verb)
			}
			if !pause && reason != "" {
				return usagef("resume: --reason is only for pause")
			}
			if err := drover.CheckReason("--reason", reason); err != nil { // before ZooKeeper is asked anything
				return usageError{err}
			}
			o, err := e.ops()
			if err != nil {
				return err
			}
			type target struct {
				scope drover.PauseScope
				name  string
			}
			var targets []target
			for _, q := range queues {
				action, path := pauseAudit(drover.PauseQueue, q, pause)
				if err := e.knownQueueAudited(q, action, path); err != nil { // every name checked before any flag is written
					return err
				}
				targets = append(targets, target{drover.PauseQueue, q})
			}
			if len(members) > 0 {
				s, err := e.zk()
				if err != nil {
					return err
				}
				live, err := s.Group().Members(e.ctx)
				if err != nil {
					return err
				}
				for _, m := range members {
					found := false
					for _, l := range live {
						found = found || l.Member.Name == m
					}
					if !found && pause {
						fmt.Fprintf(e.a.stderr, "warning: no live member is named %q; the flag applies when one joins\n", m)
					}
					targets = append(targets, target{drover.PauseMember, m})
				}
			}
			if all {
				targets = append(targets, target{drover.PauseAll, ""})
			}
			type result struct {
				Scope  drover.PauseScope `json:"scope"`
				Name   string            `json:"name,omitempty"`
				Paused bool              `json:"paused"`
				Reason string            `json:"reason,omitempty"`
			}
			var results []result
			for _, t := range targets {
				// The console's path (ops.Queues.Pause and Resume) and its
				// audit record: the same action and target as the API's.
				action, path := pauseAudit(t.scope, t.name, pause)
				detail := ""
				if pause && reason != "" {
					detail = "reason=" + reason
				}
				if pause {
					err = o.Queues().Pause(e.ctx, t.scope, t.name, operator(), reason)
				} else {
					err = o.Queues().Resume(e.ctx, t.scope, t.name)
				}
				e.audit(action, path, detail, err)
				if err != nil {
					return opsError(err)
				}
				results = append(results, result{t.scope, t.name, pause, reason})
			}
			if e.json {
				return writeJSON(e.a.stdout, results)
			}
			for _, r := range results {
				what := "everything"
				if r.Scope == drover.PauseQueue {
					what = "queue " + r.Name
				} else if r.Scope == drover.PauseMember {
					what = "member " + r.Name
				}
				e.printf("%sd %s\n", verb, what)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringArrayVar(&queues, "queue", nil, "a queue (repeatable)")
	f.StringArrayVar(&members, "member", nil, "a member name (repeatable)")
	f.BoolVar(&all, "all", false, "every queue of the cluster")
	if pause {
		f.StringVar(&reason, "reason", "", "why, for the people who look at status")
	}
	_ = cmd.RegisterFlagCompletionFunc("queue", a.completeQueues)
	_ = cmd.RegisterFlagCompletionFunc("member", a.completeMembers)
	return cmd
}

// pauseAudit is the audit action and target the console writes for a
// pause (or resume) of scope and name: "queue.pause" on
// "/queues/<q>/pause", "member.resume" on "/members/<m>/resume", "all.pause"
// on "/pause".
func pauseAudit(scope drover.PauseScope, name string, pause bool) (action, target string) {
	verb := "resume"
	if pause {
		verb = "pause"
	}
	switch scope {
	case drover.PauseQueue:
		return "queue." + verb, "/queues/" + name + "/" + verb
	case drover.PauseMember:
		return "member." + verb, "/members/" + name + "/" + verb
	}
	return "all." + verb, "/" + verb
}
