package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/rebalance"
	"github.com/drover-dev/drover/worker"
)

// Reconnect backoff defaults of MemberConfig.
const (
	DefaultReconnectMin = 500 * time.Millisecond
	DefaultReconnectMax = 10 * time.Second
	// leaveTimeout bounds the delete of the member node at shutdown.
	leaveTimeout = 5 * time.Second
)

// Worker is the runtime a member feeds: *worker.Worker.
type Worker interface {
	Runner
	// SetPause replaces the pause flags that concern this member.
	SetPause(p worker.PauseState)
	// SetSuspended stops (true) or allows task starts while the session is
	// suspended.
	SetSuspended(suspended bool)
	// AbortAll drops every queue (the session is lost).
	AbortAll()
	// Run runs the worker's freeze guard, the only renewer of the task
	// lease, until ctx ends. The member owns it: Member.Run starts it
	// first and ends it last, after the drain, the final commits and the
	// releases, so that a graceful stop kills no task that finishes
	// within the drain (DESIGN.md §11, "Stop").
	Run(ctx context.Context) error
}

// SchedulerFunc runs the scheduler under lead until ctx ends or lead's
// Lead returns an error (the session is lost).
type SchedulerFunc func(ctx context.Context, lead *SchedulerLeadership) error

// MemberConfig configures a Member. Zero values mean the documented
// defaults.
type MemberConfig struct {
	// Name is the member's and the candidates' name. Required.
	Name string
	// Coordinator configures each session; OnStateChange is the member's.
	// Required: Servers (unless Connect ignores them).
	Coordinator coordinator.Config
	// Connect opens each session. Default ConnectZooKeeper; the tests give
	// a fake session.
	Connect Connect
	// Member describes this member in its member node (Name, Capacity,
	// Tags, …); StartedAt is set at each join. Used with Worker.
	Member drover.Member
	// Worker, if set, makes this a fleet member: it joins, takes part in
	// the rebalance election and runs its assigned queues on Worker.
	Worker Worker
	// Strategy, Settle, BalanceEvery and Activity configure the
	// rebalancer (RebalancerConfig).
	Strategy     rebalance.Strategy
	Settle       time.Duration
	BalanceEvery time.Duration
	Activity     Activity
	// RedisHealth, if set, is published in the member node, so that the
	// leader gives no queues to a member that cannot reach Redis.
	RedisHealth *RedisHealth
	// Registrar, if set, lets the member, while it leads the rebalance,
	// register the queues of queue families at their first enqueue and
	// retire idle ones: it makes the registrar of each session
	// (registrar.New on the session's roles), which needs a ZooKeeper
	// session (the default Connect).
	Registrar func(s *coordinator.Session) (FamilyRegistrar, error)
	// Scheduler, if set, runs a scheduler candidate on every session.
	Scheduler SchedulerFunc
	// Current, if set, is where the member puts each session it serves
	// (and nil between them), for the worker's Confirm, Renew and Pauser:
	// built before the worker and the member, given to both. Default: a
	// Current of the member's own.
	Current *Current
	// ReconnectMin and ReconnectMax bound the backoff between failed
	// connection attempts. Defaults 500ms and 10s.
	ReconnectMin, ReconnectMax time.Duration
	// Clock is the rebalancer's time (its settle window and Redis grace).
	// Default drover.SystemClock.
	Clock   drover.TimerClock
	Logger  hclog.Logger     // default: null logger
	Metrics metrics.Recorder // default: metrics.Discard
}

// Member is one process's life in the fleet, one coordination session at a
// time.
type Member struct {
	cfg MemberConfig
	log hclog.Logger

	cur        *Current
	memberPath atomic.Pointer[string]
	generation atomic.Int64
	leading    atomic.Bool
}

// NewMember validates cfg.
func NewMember(cfg MemberConfig) (*Member, error) {
	if cfg.Name == "" {
		return nil, fmt.Errorf("fleet: %w: Name is required", drover.ErrInvalidConfig)
	}
	if cfg.Worker == nil && cfg.Scheduler == nil {
		return nil, fmt.Errorf("fleet: %w: a member needs a Worker or a Scheduler", drover.ErrInvalidConfig)
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = DefaultReconnectMin
	}
	if cfg.ReconnectMax < cfg.ReconnectMin {
		cfg.ReconnectMax = max(DefaultReconnectMax, cfg.ReconnectMin)
	}
	if cfg.Connect == nil {
		cfg.Connect = ConnectZooKeeper
	}
	// cmp.Or: the first value that is not zero (nil).
	cfg.Clock = cmp.Or[drover.TimerClock](cfg.Clock, drover.SystemClock{})
	cfg.Logger = cmp.Or(cfg.Logger, hclog.NewNullLogger())
	cfg.Metrics = cmp.Or(cfg.Metrics, metrics.Discard)
	cfg.Member.Name = cfg.Name
	if cfg.Current == nil {
		cfg.Current = &Current{}
	}
	return &Member{cfg: cfg, log: cfg.Logger, cur: cfg.Current}, nil
}

// Run keeps the member in the fleet until ctx ends: it connects (with
// backoff), joins, and serves the session; a lost session aborts every
// queue and starts over as a new member that owns nothing and leads
// nothing. When ctx ends it resigns, leaves, then drains and releases its
// queues, and returns nil.
//
// With a Worker, Run also runs the worker's freeze guard (Worker.Run) for
// its whole life and returns only after the guard has stopped: the task
// lease is renewed until the last queue has been drained and released.
func (m *Member) Run(ctx context.Context) error {
	if w := m.cfg.Worker; w != nil {
		guardCtx, stopGuard := context.WithCancel(context.Background())
		guarded := make(chan struct{})
		go func() { defer close(guarded); _ = w.Run(guardCtx) }()
		defer func() { stopGuard(); <-guarded }()
	}
	backoff := m.cfg.ReconnectMin
	for ctx.Err() == nil {
		ccfg := m.cfg.Coordinator
		ccfg.OnStateChange = m.onStateChange
		ccfg.OnServerDisagrees = func(string) { m.cfg.Metrics.IncrCounter(metrics.ZKServerDisagreements, 1) }
		start := time.Now()
		s, err := m.cfg.Connect(ctx, ccfg)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			m.log.Warn("cannot reach ZooKeeper; retrying", "error", err, "in", backoff)
			pause(ctx, never{}, backoff)
			backoff = min(2*backoff, m.cfg.ReconnectMax)
			continue
		}
		backoff = m.cfg.ReconnectMin
		m.cfg.Metrics.AddSample(metrics.ZKConnect, float32(time.Since(start).Seconds()*1000))
		m.cur.set(s)
		err = m.serve(ctx, s)
		m.cur.set(nil)
		m.memberPath.Store(nil)
		s.Close()
		if ctx.Err() != nil {
			return nil
		}
		m.log.Warn("ZooKeeper session ended; starting a new one", "error", err)
		if w := m.cfg.Worker; w != nil {
			w.AbortAll()
			w.SetSuspended(false)
		}
	}
	return nil
}

// onStateChange follows the session's state.
func (m *Member) onStateChange(st coordinator.SessionState) {
	// Lost stays suspended until every queue of the session is aborted
	// (Run): a worker resumed after a long stop must not start tasks of
	// queues that already belong to another member.
	if w := m.cfg.Worker; w != nil {
		w.SetSuspended(st != coordinator.Connected)
	}
	switch st {
	case coordinator.Connected:
		m.cfg.Metrics.IncrCounter(metrics.Reconnects, 1)
	case coordinator.Lost:
		m.cfg.Metrics.IncrCounter(metrics.SessionExpiries, 1)
	}
}

// serve is one session. It returns nil after a graceful leave (ctx ended)
// or the reason the session ended.
func (m *Member) serve(ctx context.Context, s MemberSession) error {
	var wg sync.WaitGroup
	spawn := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	leadCtx, stopLeading := context.WithCancel(context.Background())
	defer stopLeading()
	if m.cfg.Scheduler != nil {
		el, err := s.Group().Elector(coordinator.ElectionScheduler)
		if err != nil {
			return err
		}
		lead := &SchedulerLeadership{Candidacy: &Candidacy{Elector: el, Candidate: m.cfg.Name, Session: s, Logger: m.log.Named("scheduler")}}
		spawn(func() {
			defer lead.Resign()
			if err := m.cfg.Scheduler(leadCtx, lead); err != nil && leadCtx.Err() == nil && s.Err() == nil {
				m.log.Warn("scheduler stopped", "error", err)
			}
		})
	}
	var exit error
	if m.cfg.Worker == nil {
		select {
		case <-ctx.Done():
		case <-s.Done():
			exit = s.Err()
		}
	} else {
		exit = m.serveWorker(ctx, s, stopLeading, leadCtx, spawn)
	}
	stopLeading()
	wg.Wait()
	return exit
}

// serveWorker joins the fleet on one session and runs the rebalance
// candidate, the pause watch and the reconciler, until ctx ends (graceful
// leave) or the session or the reconciler ends.
func (m *Member) serveWorker(ctx context.Context, s MemberSession, stopLeading func(), leadCtx context.Context, spawn func(func())) error {
	info := m.cfg.Member
	info.StartedAt = time.Now().UTC()
	info.RedisUnreachable = m.cfg.RedisHealth.Unreachable()
	mb, err := s.Group().Join(ctx, info)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	p := mb.Path()
	m.memberPath.Store(&p)
	m.log.Info("joined the fleet", "node", p, "session", fmt.Sprintf("%#x", s.SessionID()))

	reconCtx, stopRecon := context.WithCancel(context.Background())
	defer stopRecon()
	reconDone := make(chan error, 1)
	el, err := s.Group().Elector(coordinator.ElectionRebalance)
	if err != nil {
		return err
	}
	var registrar FamilyRegistrar
	if m.cfg.Registrar != nil {
		zk, ok := s.(zkSession)
		if !ok {
			return fmt.Errorf("family registrar: %w: it needs a ZooKeeper session (Connect)", drover.ErrInvalidConfig)
		}
		if registrar, err = m.cfg.Registrar(zk.Session); err != nil {
			return err
		}
	}
	spawn(func() {
		err := RunRebalancer(leadCtx, RebalancerConfig{
			Registrar: registrar,
			Session:   s.Leader(), Elector: el, Candidate: m.cfg.Name, Strategy: m.cfg.Strategy, Settle: m.cfg.Settle,
			RedisGrace: m.cfg.RedisHealth.Grace(), OwnRedis: m.ownRedis(), Clock: m.cfg.Clock,
			BalanceEvery: m.cfg.BalanceEvery, Activity: m.cfg.Activity,
			OnRemoved: func(n int) { m.cfg.Metrics.IncrCounter(metrics.QueuesRemovedTotal, float32(n)) },
			OnCorrection: func(moved int) {
				m.cfg.Metrics.IncrCounter(metrics.BalanceCorrections, 1)
				m.cfg.Metrics.IncrCounter(metrics.BalanceQueuesMoved, float32(moved))
			},
			Logger: m.log.Named("rebalance"), OnLeading: m.leading.Store,
			OnRebalance: func(_ drover.Assignment, moved int, compute time.Duration) {
				m.cfg.Metrics.IncrCounter(metrics.RebalancesTotal, 1)
				m.cfg.Metrics.IncrCounter(metrics.QueuesMovedTotal, float32(moved))
				m.cfg.Metrics.AddSample(metrics.RebalanceTime, float32(compute.Seconds()*1000))
			},
		})
		if err != nil && leadCtx.Err() == nil {
			m.log.Warn("rebalance candidate ended", "error", err)
		}
	})
	spawn(func() { publishRedisHealth(reconCtx, m.cfg.RedisHealth, mb, info, m.log) })
	spawn(func() {
		for ps := range s.Pauses().Watch(reconCtx) {
			m.cfg.Worker.SetPause(PauseState(ps, m.cfg.Name))
		}
	})
	spawn(func() {
		reconDone <- RunReconciler(reconCtx, ReconcilerConfig{
			Session: s.Reconciler(), Member: m.cfg.Name, MemberPath: p, Runner: m.cfg.Worker,
			OnGeneration: m.generation.Store, Logger: m.log.Named("reconcile"),
			// A move while this member leaves (ctx ended: the leader may
			// move its queues before the reconciler stops) or is cut off
			// from Redis is not planned: it keeps the drain timeout.
			GivingUp: func() bool { return ctx.Err() != nil || m.cfg.RedisHealth.Unreachable() },
		})
	})

	select {
	case <-ctx.Done():
		// Graceful: give up leaderships, leave the membership so the leader
		// moves our queues at once, then drain and release what we own.
		stopLeading()
		lctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
		if err := mb.Leave(lctx); err != nil {
			m.log.Warn("leave membership", "error", err)
		}
		cancel()
		stopRecon()
		<-reconDone
		return nil
	case err := <-reconDone:
		if err == nil {
			err = errors.New("reconciler ended")
		}
		return err
	case <-s.Done():
		return s.Err()
	}
}

// ownRedis is the rebalancer's view of this member's Redis: nil (Redis
// counts as answering) without a RedisHealth.
func (m *Member) ownRedis() OwnRedis {
	if m.cfg.RedisHealth == nil {
		return nil // not a typed nil: the rebalancer tests for nil
	}
	return m.cfg.RedisHealth
}

// current returns the current session, or nil between sessions.
func (m *Member) current() MemberSession { return m.cur.session() }

// Session returns the current ZooKeeper session, or nil between sessions
// (and with a Connect that is not ZooKeeper's): the cluster gauges read
// through it. What the worker needs of the session goes through Current,
// which works on any Connect.
func (m *Member) Session() *coordinator.Session {
	if z, ok := m.current().(zkSession); ok {
		return z.Session
	}
	return nil
}

// Leading reports whether this member leads the rebalance now.
func (m *Member) Leading() bool { return m.leading.Load() }

// Ready returns nil when the member has a connected session and, for a
// fleet member, a member node.
func (m *Member) Ready() error {
	s := m.current()
	if s == nil || (m.cfg.Worker != nil && m.memberPath.Load() == nil) {
		return errors.New("not a member of the fleet yet")
	}
	if st := s.State(); st != coordinator.Connected {
		return fmt.Errorf("zookeeper session %s", st)
	}
	return nil
}

// Info describes the membership for /debug/state.
func (m *Member) Info() map[string]any {
	out := map[string]any{"generation": m.generation.Load()}
	if p := m.memberPath.Load(); p != nil {
		out["member_node"] = *p
	}
	if s := m.current(); s != nil {
		out["session"] = map[string]any{"id": fmt.Sprintf("%#x", s.SessionID()), "state": s.State().String()}
	}
	return out
}

// PauseState picks the flags of ps that concern member name.
func PauseState(ps coordinator.PauseSet, name string) worker.PauseState {
	st := worker.PauseState{All: ps.All != nil, Queues: map[string]bool{}}
	_, st.Member = ps.Members[name]
	for q := range ps.Queues {
		st.Queues[q] = true
	}
	return st
}

// never is a Lifetime that does not end: a pause between sessions.
type never struct{}

func (never) Done() <-chan struct{} { return nil }
func (never) Err() error            { return nil }
