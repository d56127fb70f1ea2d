package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/config"
)

func (a *app) workerCommand() *cobra.Command {
	var opts workerOptions
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Join the fleet and run the queues this member is assigned",
		Long: `Join the fleet as a member, take the queues the rebalance leader assigns,
and run every task of them in a child process. SIGINT or SIGTERM drains
in-flight tasks (worker.drain_timeout), commits, releases the queues and
leaves. With --scheduler the process is also a scheduler candidate.`,
		Example: `  drover worker -c /etc/drover/drover.hcl
  drover worker --name w1 --capacity 32 --tags gpu --admin-addr 0.0.0.0:9090
  DROVER_ZOOKEEPER_SERVERS=zk1:2181,zk2:2181 DROVER_REDIS_ADDRS=redis:6379 drover worker --scheduler`,
		Args: noArgs,
		RunE: a.processRun(func(ctx context.Context, cfg *config.Config) error { return runWorker(ctx, cfg, opts) }),
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Scheduler, "scheduler", false, "also run as a scheduler candidate")
	a.memberFlags(cmd)
	a.settingFlag(f, "capacity", "worker.capacity", "tasks run at once")
	a.settingFlag(f, "tags", "worker.tags", "this member's tags, comma-separated")
	a.settingFlag(f, "admin-addr", "worker.admin_addr", `admin HTTP address ("off" disables it)`)
	a.settingFlag(f, "strategy", "worker.strategy", "assignment strategy: sticky, range, round-robin")
	a.settingFlag(f, "drain-timeout", "worker.drain_timeout", "how long in-flight tasks may finish when a queue is given up")
	_ = cmd.RegisterFlagCompletionFunc("strategy", fixedCompletion(config.Strategies...))
	return cmd
}

func (a *app) schedulerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run a scheduler candidate: the elected leader fires schedules into queues",
		Long: `Enter the scheduler election; while elected, fire interval, cron and one-shot
schedules into their queues. Run two or more for failover: a slot is never
fired twice. 'drover worker --scheduler' runs the same inside a worker.

Its admin server listens on scheduler.admin_addr (default 127.0.0.1:9091),
not on worker.admin_addr, so a worker and a scheduler on one host can share
one configuration file.`,
		Example: `  drover scheduler -c /etc/drover/drover.hcl
  drover scheduler --name sched-a --admin-addr 0.0.0.0:9091`,
		Args: noArgs,
		RunE: a.processRun(runScheduler),
	}
	a.memberFlags(cmd)
	// Its own key: a worker and a scheduler on one host share drover.hcl.
	a.settingFlag(cmd.Flags(), "admin-addr", "scheduler.admin_addr", `admin HTTP address: /healthz, /readyz, /metrics ("off" disables it)`)
	return cmd
}

// memberFlags adds the flags naming this process in the fleet.
func (a *app) memberFlags(cmd *cobra.Command) {
	a.settingFlag(cmd.Flags(), "name", "worker.name", "member name, stable across restarts (default: the host name)")
}
