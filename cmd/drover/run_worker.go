package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	rungroup "github.com/oklog/run"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/fleet"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/jobs"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/rebalance"
	"github.com/drover-dev/drover/registrar"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/worker"
	"github.com/drover-dev/drover/worker/executor"
)

// The stores wired into the runtime, checked at compile time.
var (
	_ worker.Store      = queue.Log{}
	_ jobs.Store        = queue.Jobs{}
	_ scheduler.Store   = (*queue.ScheduleStore)(nil)
	_ scheduler.Catalog = (*queue.ScheduleStore)(nil)
	_ fleet.Worker      = (*worker.Worker)(nil)
)

// workerOptions are the worker command's options that are not settings.
type workerOptions struct {
	// Scheduler also runs a scheduler candidate in the worker process.
	Scheduler bool
}

// runWorker runs a worker until ctx ends (SIGINT/SIGTERM), then shuts down in
// the order of DESIGN.md §6: stop claiming and fetching, drain in-flight
// tasks (bounded by worker.drain_timeout, then kill), final commits and
// releases, leave the membership, close the clients.
//
// This is wiring: every actor is a call into its package. One oklog/run
// group holds them: the admin HTTP server, the watch on the lease
// supervisor, the gauges (fleet.Member.PublishGauges), the Redis health
// ping (fleet.RedisHealth), the wake-up relay (worker.FollowWakeups) and the
// member (fleet.Member.Run). A signal interrupts them all at once, so the
// shutdown order lives in fleet.Member.Run, not here: stop claiming, drain,
// final commits and releases, leave, and the worker's freeze guard (the
// only renewer of the task lease) last. The deferred closes run after the
// group, in reverse: the metrics sinks, the pool, the lease, the store.
func runWorker(ctx context.Context, cfg *config.Config, opts workerOptions) error {
	log := cfg.Logger("drover", os.Stderr).With("member", cfg.Worker.Name)
	strategy, err := rebalance.ByName(cfg.Worker.Strategy)
	if err != nil {
		return fmt.Errorf("worker.strategy: %w", err)
	}
	ccfg, err := cfg.Coordinator(log.Named("zk"))
	if err != nil {
		return err
	}
	store, closeStore, err := openStore(cfg, "drover-worker-"+cfg.Worker.Name, log)
	if err != nil {
		return err
	}
	defer closeStore()
	// The task lease (docs/semantics.md, "One owner at a time"): a
	// supervisor process kills the task groups when the freeze guard stops
	// renewing, a third of the session timeout after the last renewal.
	lease, err := executor.NewLease(executor.LeaseConfig{Bound: cfg.ZooKeeper.SessionTimeout / 3})
	if err != nil {
		return err
	}
	defer lease.Close() // after the drain: nothing is tracked any more
	exec, err := executor.New(executor.Config{Logger: log.Named("task"), Lease: lease})
	if err != nil {
		return err
	}
	if po, ok := exec.(executor.PoolOwner); ok {
		defer po.Close() // after the drain: no pooled child outlives the worker
	}
	reg, err := setupMetrics(cfg, log)
	if err != nil {
		return err
	}
	defer reg.Close()
	// The health ping and the readiness probe have a connection of their
	// own: through the store's pool, a member behind on its work timed out
	// its pings waiting for a free connection and gave its queues up
	// (queue.Pinger).
	pinger, err := newPinger(cfg, "drover-worker-"+cfg.Worker.Name)
	if err != nil {
		return err
	}
	defer pinger.Close()
	redisHealth, err := fleet.NewRedisHealth(fleet.RedisHealthConfig{Ping: pinger.Ping, GiveUpAfter: cfg.Worker.RedisGiveUpAfter, Logger: log.Named("redis")})
	if err != nil {
		return err
	}
	// Built in dependency order: the member feeds the worker its queues,
	// and the worker needs the member's session (to confirm it after a
	// freeze, to renew the task lease, to park an ordered queue); the
	// session's holder comes first, and both get it.
	session := &fleet.Current{}
	renew, err := fleet.LeaseRenewer(fleet.LeaseRenewerConfig{Session: session.Contact, Renew: lease.Renew, Logger: log})
	if err != nil {
		return err
	}
	w, err := worker.New(worker.Config{
		Member: cfg.Worker.Name, Capacity: cfg.Worker.Capacity, BatchSize: cfg.Worker.BatchSize,
		DrainTimeout: cfg.Worker.DrainTimeout,
		Store:        store.Log(), Executor: exec,
		Logger: log.Named("worker"), Metrics: reg, Tracer: store.Tracer(),
		Confirm: session.Confirm, Renew: renew,
		Pauser: session, // an ordered queue with on_failure park pauses itself
	})
	if err != nil {
		return err
	}
	// The admin address goes into the member node; the admin handler
	// reads the member: listen first, hand the handler over once both
	// exist.
	guard, err := debugGuard(cfg)
	if err != nil {
		return err
	}
	admin, err := listenAdmin("worker.admin_addr", cfg.Worker.AdminAddr)
	if err != nil {
		return err
	}
	var adminAddr string
	if admin != nil {
		adminAddr = admin.addr
	}
	host, _ := os.Hostname()
	mcfg := fleet.MemberConfig{
		Name: cfg.Worker.Name, Coordinator: ccfg, Worker: w, Current: session, Strategy: strategy, Settle: cfg.Worker.Settle,
		BalanceEvery: cfg.Worker.BalanceEvery,
		Member: drover.Member{Host: host, PID: os.Getpid(), Version: version, AdminAddr: adminAddr,
			Capacity: cfg.Worker.Capacity, Tags: cfg.Worker.Tags},
		Logger: log, Metrics: reg, RedisHealth: redisHealth,
		// while it leads the rebalance, the member registers and retires
		// the queues of queue families
		Registrar: func(s *coordinator.Session) (fleet.FamilyRegistrar, error) {
			return familyRegistrar(s, store, log.Named("families"))
		},
		// a balance correction moves only queues whose log is empty
		Activity: store.Inspector(),
	}
	if opts.Scheduler {
		mcfg.Scheduler = schedulerRole(cfg, store, reg, log.Named("scheduler"))
	}
	m, err := fleet.NewMember(mcfg)
	if err != nil {
		return err
	}
	if admin != nil {
		admin.srv.Handler = w.AdminHandler(worker.AdminConfig{
			Ready: func() error { return cmp.Or(redisHealth.Ready(), readyWithRedis(m.Ready, pinger.Ping)) },
			Info: func() map[string]any {
				out := m.Info()
				out["admin_addr"], out["version"] = adminAddr, version
				return out
			},
			Metrics: reg.Handler(), Debug: guard,
			Audit: func(ctx context.Context, e worker.AuditEntry) error { // a cancel: the console's record, through ops
				return ops.WriteAudit(ctx, store.Operator(), ops.AuditRecord(e), nil)
			},
		})
	}

	var g rungroup.Group
	if admin != nil {
		g.Add(admin.serve, admin.interrupt)
	}
	{ // a worker whose lease supervisor died cannot run a task safely: stop
		lctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error {
			select {
			case <-lease.Done():
				return lease.Err()
			case <-lctx.Done():
				return nil
			}
		}, func(error) { cancel() })
	}
	{ // worker and cluster gauges
		gctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { m.PublishGauges(gctx, w.PublishGauges); return nil }, func(error) { cancel() })
	}
	{ // one Redis ping per interval: a member cut off from Redis gives its queues up
		hctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { redisHealth.Run(hctx); return nil }, func(error) { cancel() })
	}
	{ // enqueue notifications wake idle queue loops
		wctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { w.FollowWakeups(wctx, store.Listener()); return nil }, func(error) { cancel() })
	}
	{ // membership: join, reconcile, rejoin after a lost session. The
		// member also runs the worker's freeze guard, which renews the task
		// lease, and stops it only after its queues are drained and
		// released: a signal interrupts every actor of the group at once,
		// so the order of the stop lives in fleet.Member, not here.
		mctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { return m.Run(mctx) }, func(error) { cancel() })
	}
	{ // the signal: ends the group, which interrupts the rest
		g.Add(func() error { <-ctx.Done(); return nil }, func(error) {})
	}
	log.Info("worker starting", "admin", adminAddr, "capacity", cfg.Worker.Capacity, "strategy", strategy.Name(), "scheduler", opts.Scheduler)
	err = g.Run()
	log.Info("worker stopped")
	return err
}

// openStore connects to Redis. With tracing on (block tracing), the
// store's enqueues are traced and store.Tracer() is the process's tracer;
// the returned close func also flushes the last spans.
func openStore(cfg *config.Config, clientName string, log hclog.Logger) (*queue.Store, func(), error) {
	ro, err := cfg.RedisOptions(clientName)
	if err != nil {
		return nil, nil, err
	}
	queue.SetDriverLogger(log.Named("redis"))
	tr, stopTracing, err := setupTracing(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	rdb, err := queue.NewClient(ro)
	if err != nil {
		stopTracing()
		return nil, nil, fmt.Errorf("redis: %w", err)
	}
	store, err := queue.New(queue.Config{Client: rdb, Prefix: cfg.Redis.Prefix, Logger: log.Named("queue"), Tracer: tr, Durable: cfg.QueueDurable()})
	if err != nil {
		rdb.Close()
		stopTracing()
		return nil, nil, err
	}
	// The layout version producers in other languages check (best effort:
	// Redis may come up later; the next start writes it).
	lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := store.MarkLayout(lctx); err != nil {
		log.Warn("layout version not written", "error", err)
	}
	cancel()
	return store, func() { rdb.Close(); stopTracing() }, nil
}

// newPinger returns a Redis pinger with a connection of its own, for the
// Redis described in cfg (queue.Pinger).
func newPinger(cfg *config.Config, clientName string) (*queue.Pinger, error) {
	ro, err := cfg.RedisOptions(clientName)
	if err != nil {
		return nil, err
	}
	p, err := queue.NewPinger(ro)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	return p, nil
}

// familyRegistrar is the registrar of one session of a fleet member:
// ZooKeeper's queue registry, families and offsets, and store's Redis.
func familyRegistrar(s *coordinator.Session, store *queue.Store, log hclog.Logger) (fleet.FamilyRegistrar, error) {
	r, err := registrar.New(registrar.Config{Registry: registrar.ZooKeeper(s), Redis: store.Families(), Logger: log})
	if err != nil {
		return nil, err
	}
	return r, nil
}
