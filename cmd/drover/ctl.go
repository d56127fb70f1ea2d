package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/zksession"
	"github.com/drover-dev/drover/queue"
)

func (a *app) ctlCommand() *cobra.Command {
	cmd := groupCommand("ctl", "Inspect and steer a running fleet")
	cmd.Long = `Inspect and steer a running fleet through ZooKeeper and Redis: status,
one worker's live state, pause and resume, enqueue and revoke, schedules,
dead letters, offsets and queue configurations.

Every command prints a table by default and JSON with -o json. Exit codes:
0 ok, 1 error, 2 usage (bad flags, JSON, durations), 3 not found, 4
unreachable (within zookeeper.connect_timeout), 5 refused by the cluster's
state.`
	cmd.Example = `  drover ctl status
  drover ctl pause --queue emails --reason "smtp outage"
  drover ctl offsets reset emails --to-datetime 2024-05-01T10:00:00Z`
	cmd.AddCommand(
		a.withWatch(a.ctlStatusCommand()), a.ctlDumpCommand(), a.ctlMessagesCommand(), a.ctlRunNowCommand(),
		a.ctlPauseCommand(true), a.ctlPauseCommand(false),
		a.ctlEnqueueCommand(), a.ctlRevokeCommand(), a.ctlJobCommand(),
		withSubcommands(a.ctlScheduleCommand(), a.ctlScheduleTriggerCommand()), a.ctlDeadCommand(), a.ctlOffsetsCommand(), a.ctlQueueCommand(),
		a.ctlParkedCommand(), a.ctlCancelCommand(), a.ctlFamilyCommand(),
	)
	return cmd
}

// ctlEnv is what one ctl command works with: the configuration and, made
// on first use, a ZooKeeper session and a queue store.
type ctlEnv struct {
	ctx        context.Context
	a          *app
	cfg        *config.Config
	json       bool
	zs         *zksession.Keeper // nil until the first zk()
	closeRedis func() error      // nil until the first queues()
	store      *queue.Store
	logger     hclog.Logger
	// cmdFlags are the command's flags, to ask which were given.
	cmdFlags *pflag.FlagSet
}

// ctlRun wraps a ctl command's body: it loads the configuration, parses -o
// and closes the connections the body made.
func (a *app) ctlRun(body func(e *ctlEnv, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		asJSON, err := a.jsonOutput()
		if err != nil {
			return err
		}
		cfg, err := a.loadConfig(cmd)
		if err != nil {
			return err
		}
		e := &ctlEnv{ctx: cmd.Context(), a: a, cfg: cfg, json: asJSON, logger: hclog.NewNullLogger(), cmdFlags: cmd.Flags()}
		defer e.close()
		return body(e, args)
	}
}

// zk returns the ZooKeeper session, connecting on first use (and again
// after a loss: zksession.Keeper). A server that does not answer within
// zookeeper.connect_timeout is an unreachableError.
func (e *ctlEnv) zk() (*coordinator.Session, error) {
	if e.zs == nil {
		cc, err := e.cfg.Coordinator(e.logger)
		if err != nil {
			return nil, err
		}
		if e.zs, err = zksession.Dial(cc, zksession.Config{Logger: e.logger}); err != nil {
			return nil, err
		}
	}
	s, err := e.zs.Session(e.ctx)
	if err != nil {
		if errors.Is(err, drover.ErrInvalidConfig) || e.ctx.Err() != nil {
			return nil, err
		}
		return nil, unreachableError{fmt.Errorf("connect to ZooKeeper %s (root %s) within %s: %w",
			strings.Join(e.cfg.ZooKeeper.Servers, ","), e.cfg.ZooKeeper.Root, e.cfg.ZooKeeper.ConnectTimeout, err)}
	}
	return s, nil
}

// redisPingTimeout bounds ctl's first Redis round trip.
const redisPingTimeout = 5 * time.Second

// queues returns the queue store, connecting (and pinging Redis) on first
// use. A Redis that does not answer is an unreachableError.
func (e *ctlEnv) queues() (*queue.Store, error) {
	if e.store != nil {
		return e.store, nil
	}
	o, err := e.cfg.RedisOptions("drover-ctl")
	if err != nil {
		return nil, err
	}
	o.DialTimeout = redisPingTimeout
	rdb, err := queue.NewClient(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(e.ctx, redisPingTimeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, unreachableError{fmt.Errorf("reach Redis %s: %w", strings.Join(e.cfg.Redis.Addrs, ","), err)}
	}
	st, err := queue.New(queue.Config{Client: rdb, Prefix: e.cfg.Redis.Prefix, Logger: e.logger, Durable: e.cfg.QueueDurable()})
	if err != nil {
		rdb.Close()
		return nil, err
	}
	e.closeRedis, e.store = rdb.Close, st
	return st, nil
}

func (e *ctlEnv) close() {
	if e.zs != nil {
		e.zs.Close()
	}
	if e.closeRedis != nil {
		e.closeRedis()
	}
}

// knownQueue checks that name exists by the fleet's one rule
// (ops.KnownQueue: in Redis's registry, else configured in ZooKeeper, its
// own configuration or its family's), connecting to ZooKeeper only when
// Redis does not know the queue; a queue with messages is known while
// ZooKeeper is down. An unknown queue fails with drover.ErrQueueNotFound
// (exit 3) and ctl's hint (queueHint), so that a typo does not create a
// stray queue.
func (e *ctlEnv) knownQueue(name string) error {
	reg := ops.RegistryFunc(func(ctx context.Context, q string) (bool, error) {
		st, err := e.queues()
		if err != nil {
			return false, err
		}
		return st.Inspector().QueueKnown(ctx, q)
	})
	confs := ops.ConfigsFunc(func(ctx context.Context, q string) (coordinator.QueueEntry, error) {
		s, err := e.zk()
		if err != nil {
			if e.hasFlag("force") {
				return coordinator.QueueEntry{}, fmt.Errorf("check that queue %q exists (pass --force to skip the check): %w", q, err)
			}
			return coordinator.QueueEntry{}, err
		}
		return s.Queues().GetOrFamily(ctx, q)
	})
	return e.queueHint(name, ops.KnownQueue(e.ctx, reg, confs, name))
}

// queueHint adds to err, when it says a queue is not found, how to create
// it (and --force on commands that have it); a bad name is a usage error.
// Any other err is returned as is.
func (e *ctlEnv) queueHint(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case ops.IsBadInput(err):
		return usageError{err}
	case errors.Is(err, drover.ErrQueueNotFound):
		force := ""
		if e.hasFlag("force") {
			force = ", or pass --force"
		}
		return fmt.Errorf("queue %q: %w (create it with `drover ctl queue create %s`%s)", name, drover.ErrQueueNotFound, name, force)
	}
	return err
}

// hasFlag reports whether the command has the flag (given or not).
func (e *ctlEnv) hasFlag(name string) bool {
	return e.cmdFlags != nil && e.cmdFlags.Lookup(name) != nil
}

// knownQueueStore checks the queue with knownQueue and returns the store.
func (e *ctlEnv) knownQueueStore(name string) (*queue.Store, error) {
	if err := e.knownQueue(name); err != nil {
		return nil, err
	}
	return e.queues()
}

// queueRun is ctlRun for a command on a known queue, its first argument:
// body gets the queue store once knownQueue has checked the queue.
func (a *app) queueRun(body func(e *ctlEnv, st *queue.Store, args []string) error) func(*cobra.Command, []string) error {
	return ctlRunOn(a, func(e *ctlEnv, args []string) (*queue.Store, error) { return e.knownQueueStore(args[0]) }, body)
}

// ctlRunOn is ctlRun for a body that works on what open returns (a
// session, a store, the operations): open runs first, and its failure is
// the command's.
func ctlRunOn[R any](a *app, open func(e *ctlEnv, args []string) (R, error), body func(e *ctlEnv, r R, args []string) error) func(*cobra.Command, []string) error {
	return a.ctlRun(func(e *ctlEnv, args []string) error {
		r, err := open(e, args)
		if err != nil {
			return err
		}
		return body(e, r, args)
	})
}

// printf writes to stdout (table mode messages).
func (e *ctlEnv) printf(format string, a ...any) { fmt.Fprintf(e.a.stdout, format, a...) }

// report prints what a command did: v as JSON with -o json, else the line
// of format and a.
func (e *ctlEnv) report(v any, format string, a ...any) error {
	if e.json {
		return writeJSON(e.a.stdout, v)
	}
	e.printf(format, a...)
	return nil
}

// operator names the person or program acting, for pause flags and resets:
// user@host.
func operator() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}
