package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
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
	"github.com/drover-dev/drover/scheduler"
)

// runScheduler runs a scheduler candidate until ctx ends: it campaigns in
// /election/scheduler and, while it leads and its session is connected,
// fires due schedules. A lost session means a new session and a new
// candidacy.
func runScheduler(ctx context.Context, cfg *config.Config) error {
	log := cfg.Logger("drover", os.Stderr).With("scheduler", cfg.Worker.Name)
	store, closeStore, err := openStore(cfg, "drover-scheduler-"+cfg.Worker.Name, log)
	if err != nil {
		return err
	}
	defer closeStore()
	reg, err := setupMetrics(cfg, log)
	if err != nil {
		return err
	}
	defer reg.Close()
	var session atomic.Pointer[coordinator.Session]
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if s := session.Load(); s == nil || s.State() != coordinator.Connected {
			http.Error(w, "not ready: no connected ZooKeeper session", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	if h := reg.Handler(); h != nil {
		mux.Handle("GET /metrics", h)
	}
	admin, err := newAdminServer("scheduler.admin_addr", cfg.Scheduler.AdminAddr, mux)
	if err != nil {
		return err
	}
	var g rungroup.Group
	if admin != nil {
		g.Add(admin.serve, admin.interrupt)
	}
	sctx, cancel := context.WithCancel(context.Background())
	g.Add(func() error { return candidacy(sctx, cfg, store, reg, log, &session) }, func(error) { cancel() })
	g.Add(func() error { <-ctx.Done(); return nil }, func(error) {})
	return g.Run()
}

// candidacy keeps a scheduler candidate in the election, one session at a
// time, until ctx ends.
func candidacy(ctx context.Context, cfg *config.Config, store *queue.Store, reg *metrics.Registry, log hclog.Logger, session *atomic.Pointer[coordinator.Session]) error {
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		ccfg, err := cfg.Coordinator(log.Named("zk"))
		if err != nil {
			return err
		}
		s, err := coordinator.Connect(ctx, ccfg)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Warn("cannot reach ZooKeeper; retrying", "error", err, "in", backoff)
			sleep(ctx, backoff)
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = 500 * time.Millisecond
		session.Store(s)
		runSchedulerTerm(ctx, s, store, cfg, reg, log)
		session.Store(nil)
		s.Close()
	}
	return nil
}

// runSchedulerTerm runs the scheduler on one session until ctx ends or the
// session is lost.
func runSchedulerTerm(ctx context.Context, s *coordinator.Session, store *queue.Store, cfg *config.Config, reg *metrics.Registry, log hclog.Logger) {
	el, err := s.Election(coordinator.ElectionScheduler)
	if err != nil {
		log.Error("scheduler election", "error", err)
		return
	}
	lead := &adapt.ElectionLeadership{Election: el, Candidate: cfg.Worker.Name}
	defer lead.Resign()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.Done():
			cancel()
		case <-sctx.Done():
		}
	}()
	sch, err := scheduler.New(scheduler.Config{
		Store: store.Schedules(),
		Enqueuer: scheduler.EnqueuerFunc(func(ctx context.Context, m *drover.Message) (bool, error) {
			r, err := store.Enqueue(ctx, m)
			return r.Duplicate, err
		}),
		Leadership:   lead,
		Logger:       log,
		Metrics:      reg.GoMetrics(),
		PollInterval: cfg.Scheduler.PollInterval,
		MisfireGrace: cfg.Scheduler.MisfireGrace,
		CatchupLimit: cfg.Scheduler.CatchupLimit,
	})
	if err != nil {
		log.Error("scheduler", "error", err)
		return
	}
	if err := sch.Run(sctx); err != nil && sctx.Err() == nil {
		log.Warn("scheduler stopped", "error", fmt.Errorf("run: %w", err))
	}
}
