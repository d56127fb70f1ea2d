package main

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
)

// completionTimeout bounds the lookups made for shell completion: a slow or
// unreachable cluster must not hang the shell.
const completionTimeout = 2 * time.Second

// completeFrom runs list against the cluster of cmd's configuration and
// offers its result; any error offers nothing.
func (a *app) completeFrom(cmd *cobra.Command, list func(e *ctlEnv) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	cfg, err := a.loadConfig(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if cfg.ZooKeeper.ConnectTimeout > completionTimeout {
		cfg.ZooKeeper.ConnectTimeout = completionTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	e := &ctlEnv{ctx: ctx, a: a, cfg: cfg, logger: hclog.NewNullLogger(), cmdFlags: cmd.Flags()}
	defer e.close()
	names, err := list(e)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

func (a *app) completeQueues(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return a.completeFrom(cmd, func(e *ctlEnv) ([]string, error) {
		s, err := e.zk()
		if err != nil {
			return nil, err
		}
		entries, err := s.Queues().List(e.ctx)
		return namesOf(len(entries), err, func(i int) string { return entries[i].Name })
	})
}

// completeQueueArg completes the first positional argument with queues.
func (a *app) completeQueueArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeQueues(cmd, args, toComplete)
}

func (a *app) completeMembers(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 && cmd.Name() == "dump" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeFrom(cmd, func(e *ctlEnv) ([]string, error) {
		s, err := e.zk()
		if err != nil {
			return nil, err
		}
		members, err := s.Group().Members(e.ctx)
		return namesOf(len(members), err, func(i int) string { return members[i].Member.Name })
	})
}

func (a *app) completeSchedules(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeFrom(cmd, func(e *ctlEnv) ([]string, error) {
		m, err := e.manager()
		if err != nil {
			return nil, err
		}
		entries, err := m.List(e.ctx)
		return namesOf(len(entries), err, func(i int) string { return entries[i].Name })
	})
}

// namesOf is the names of a listing of n items (name(i) the i-th's), or
// the listing's error.
func namesOf(n int, err error, name func(i int) string) ([]string, error) {
	if err != nil {
		return nil, err
	}
	names := make([]string, n)
	for i := range names {
		names[i] = name(i)
	}
	return names, nil
}
