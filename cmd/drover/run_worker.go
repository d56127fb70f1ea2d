package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	rungroup "github.com/oklog/run"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/adapt"
	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/rebalance"
	"github.com/drover-dev/drover/worker"
	"github.com/drover-dev/drover/worker/executor"
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
// One oklog/run group holds the actors: the admin HTTP server, the Redis
// wake-up subscription and the membership loop. The membership loop joins
// the fleet with a ZooKeeper session; when that session is lost it aborts
// every queue and joins again as a new member.
func runWorker(ctx context.Context, cfg *config.Config, opts workerOptions) error {
	log := cfg.Logger("drover", os.Stderr).With("member", cfg.Worker.Name)
	strategy, err := rebalance.ByName(cfg.Worker.Strategy)
	if err != nil {
		return fmt.Errorf("worker.strategy: %w", err)
	}
	store, closeStore, err := openStore(cfg, "drover-worker-"+cfg.Worker.Name, log)
	if err != nil {
		return err
	}
	defer closeStore()
	exec, err := executor.New(executor.Config{Logger: log.Named("task")})
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
	lost := make(chan string, 256)
	m := &member{cfg: cfg, opts: opts, log: log, store: store, strategy: strategy, lost: lost, metrics: reg}
	w, err := worker.New(worker.Config{
		Member: cfg.Worker.Name, Capacity: cfg.Worker.Capacity, BatchSize: cfg.Worker.BatchSize,
		DrainTimeout: cfg.Worker.DrainTimeout,
		Log:          adapt.QueueLog{Store: store}, Requeuer: adapt.QueueLog{Store: store}, Executor: exec,
		Logger: log.Named("worker"), Metrics: reg, Confirm: m.confirm,
		OnLost: func(q string, _ error) {
			select {
			case lost <- q:
			default:
			}
		},
	})
	if err != nil {
		return err
	}
	m.w = w

	var g rungroup.Group
	admin, err := newAdminServer(cfg.Worker.AdminAddr, w.AdminHandler(worker.AdminConfig{Ready: m.ready, Info: m.info, Metrics: reg.Handler()}))
	if err != nil {
		return err
	}
	if admin != nil {
		m.adminAddr = admin.addr
		g.Add(admin.serve, admin.interrupt)
	}
	{ // the freeze guard: no task starts after a freeze until the session is confirmed
		fctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { return w.Run(fctx) }, func(error) { cancel() })
	}
	{ // worker and cluster gauges
		gctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { m.publishGauges(gctx); return nil }, func(error) { cancel() })
	}
	{ // enqueue notifications wake idle queue loops
		wctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error {
			ch, err := store.Wakeups(wctx)
			if err != nil {
				log.Warn("no enqueue notifications; queues poll", "error", err)
				<-wctx.Done()
				return nil
			}
			for q := range ch {
				w.Wake(q)
			}
			return nil
		}, func(error) { cancel() })
	}
	{ // membership: join, reconcile, rejoin after a lost session
		mctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { return m.run(mctx) }, func(error) { cancel() })
	}
	{ // the signal: ends the group, which interrupts the rest
		g.Add(func() error { <-ctx.Done(); return nil }, func(error) {})
	}
	log.Info("worker starting", "admin", m.adminAddr, "capacity", cfg.Worker.Capacity, "strategy", strategy.Name(), "scheduler", opts.Scheduler)
	err = g.Run()
	log.Info("worker stopped")
	return err
}

// openStore connects to Redis.
func openStore(cfg *config.Config, clientName string, log hclog.Logger) (*queue.Store, func(), error) {
	ro, err := cfg.RedisOptions(clientName)
	if err != nil {
		return nil, nil, err
	}
	rdb, err := queue.NewClient(ro)
	if err != nil {
		return nil, nil, fmt.Errorf("redis: %w", err)
	}
	store, err := queue.New(queue.Config{Client: rdb, Prefix: cfg.Redis.Prefix, Logger: log.Named("queue")})
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return store, func() { rdb.Close() }, nil
}

// member is the worker's life in the fleet, one ZooKeeper session at a time.
type member struct {
	cfg       *config.Config
	opts      workerOptions
	log       hclog.Logger
	store     *queue.Store
	w         *worker.Worker
	strategy  rebalance.Strategy
	lost      chan string
	adminAddr string
	metrics   *metrics.Registry
	leading   atomic.Bool // rebalance leader: publishes the cluster gauges

	session    atomic.Pointer[coordinator.Session]
	memberPath atomic.Pointer[string]
	generation atomic.Int64
}

// run joins the fleet and serves until ctx ends; a lost session means
// joining again as a new member that owns nothing and leads nothing.
func (m *member) run(ctx context.Context) error {
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		ccfg, err := m.cfg.Coordinator(m.log.Named("zk"))
		if err != nil {
			return err
		}
		ccfg.OnStateChange = func(st coordinator.SessionState) {
			// Lost stays suspended until every queue of the session is
			// aborted (below): a worker resumed after a long stop must not
			// start tasks of queues that already belong to another member.
			m.w.SetSuspended(st != coordinator.Connected)
			switch st {
			case coordinator.Connected:
				m.metrics.IncrCounter(metrics.Reconnects, 1)
			case coordinator.Lost:
				m.metrics.IncrCounter(metrics.SessionExpiries, 1)
			}
		}
		start := time.Now()
		s, err := coordinator.Connect(ctx, ccfg)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			m.log.Warn("cannot reach ZooKeeper; retrying", "error", err, "in", backoff)
			sleep(ctx, backoff)
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = 500 * time.Millisecond
		m.metrics.AddSample(metrics.ZKConnect, float32(time.Since(start).Seconds()*1000))
		m.session.Store(s)
		err = m.serve(ctx, s)
		m.session.Store(nil)
		m.memberPath.Store(nil)
		s.Close()
		if ctx.Err() != nil {
			return nil
		}
		m.log.Warn("ZooKeeper session lost: every queue dropped; joining again", "error", err)
		m.w.AbortAll()
		m.w.SetSuspended(false)
	}
	return nil
}

// serve is one session's membership. It returns nil after a graceful leave
// (ctx ended) or the reason the session ended.
func (m *member) serve(ctx context.Context, s *coordinator.Session) error {
	host, _ := os.Hostname()
	mb, err := s.Join(ctx, drover.Member{
		Name: m.cfg.Worker.Name, Host: host, PID: os.Getpid(), Version: version,
		AdminAddr: m.adminAddr, Capacity: m.cfg.Worker.Capacity, Tags: m.cfg.Worker.Tags,
		StartedAt: time.Now().UTC(),
	})
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	p := mb.Path()
	m.memberPath.Store(&p)
	m.log.Info("joined the fleet", "node", p, "session", fmt.Sprintf("%#x", s.SessionID()))

	var wg sync.WaitGroup
	spawn := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	leadCtx, stopLeading := context.WithCancel(context.Background())
	reconCtx, stopRecon := context.WithCancel(context.Background())
	defer stopLeading()
	defer stopRecon()
	reconDone := make(chan error, 1)

	spawn(func() {
		err := s.RunRebalancer(leadCtx, coordinator.RebalancerConfig{
			Candidate: m.cfg.Worker.Name, Strategy: m.strategy, Settle: m.cfg.Worker.Settle,
			Logger: m.log.Named("rebalance"), OnLeading: m.leading.Store,
			OnRebalance: func(_ drover.Assignment, moved int, compute time.Duration) {
				m.metrics.IncrCounter(metrics.RebalancesTotal, 1)
				m.metrics.IncrCounter(metrics.QueuesMovedTotal, float32(moved))
				m.metrics.AddSample(metrics.RebalanceTime, float32(compute.Seconds()*1000))
			},
		})
		if err != nil && leadCtx.Err() == nil {
			m.log.Warn("rebalance candidate ended", "error", err)
		}
	})
	spawn(func() {
		for ps := range s.WatchPauses(reconCtx) {
			m.w.SetPause(pauseState(ps, m.cfg.Worker.Name))
		}
	})
	if m.opts.Scheduler {
		spawn(func() { runSchedulerTerm(leadCtx, s, m.store, m.cfg, m.metrics, m.log.Named("scheduler")) })
	}
	spawn(func() {
		reconDone <- s.RunReconciler(reconCtx, coordinator.ReconcilerConfig{
			Member: m.cfg.Worker.Name, MemberPath: p, Runner: adapt.WorkerRunner{W: m.w}, Lost: m.lost,
			OnGeneration: m.generation.Store, Logger: m.log.Named("reconcile"),
		})
	})

	var exit error
	select {
	case <-ctx.Done():
		// Graceful: give up leaderships, leave the membership so the leader
		// moves our queues at once, then drain and release what we own.
		stopLeading()
		lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := mb.Leave(lctx); err != nil {
			m.log.Warn("leave membership", "error", err)
		}
		cancel()
		stopRecon()
		<-reconDone
	case exit = <-reconDone:
		if exit == nil {
			exit = errors.New("reconciler ended")
		}
	case <-s.Done():
		exit = s.Err()
	}
	stopLeading()
	stopRecon()
	wg.Wait()
	return exit
}

// publishGauges sets the worker's gauges every few seconds and, while this
// member leads the rebalance, the cluster's.
func (m *member) publishGauges(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		m.w.PublishGauges()
		if s := m.session.Load(); s != nil && m.leading.Load() {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := s.ClusterStats(sctx)
			cancel()
			if err == nil {
				m.metrics.SetGauge(metrics.Members, float32(st.Members))
				m.metrics.SetGauge(metrics.Queues, float32(st.Queues))
				m.metrics.SetGauge(metrics.UnownedQueues, float32(st.Unowned()))
				m.metrics.SetGauge(metrics.SchedulerLeader, b2f(st.SchedulerLeader))
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

// confirm proves the current session alive with a fresh round trip (the
// worker's freeze guard).
func (m *member) confirm(ctx context.Context) error {
	s := m.session.Load()
	if s == nil {
		return errors.New("no ZooKeeper session")
	}
	return s.Confirm(ctx)
}

// ready is /readyz: a connected session and a member node.
func (m *member) ready() error {
	s := m.session.Load()
	if s == nil || m.memberPath.Load() == nil {
		return errors.New("not a member of the fleet yet")
	}
	if st := s.State(); st != coordinator.Connected {
		return fmt.Errorf("zookeeper session %s", st)
	}
	return nil
}

// info adds the membership to /debug/state.
func (m *member) info() map[string]any {
	out := map[string]any{"generation": m.generation.Load(), "admin_addr": m.adminAddr, "version": version}
	if p := m.memberPath.Load(); p != nil {
		out["member_node"] = *p
	}
	if s := m.session.Load(); s != nil {
		out["session"] = map[string]any{"id": fmt.Sprintf("%#x", s.SessionID()), "state": s.State().String()}
	}
	return out
}

// pauseState picks the flags that concern this member.
func pauseState(ps coordinator.PauseSet, name string) worker.PauseState {
	st := worker.PauseState{All: ps.All != nil, Queues: map[string]bool{}}
	_, st.Member = ps.Members[name]
	for q := range ps.Queues {
		st.Queues[q] = true
	}
	return st
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
