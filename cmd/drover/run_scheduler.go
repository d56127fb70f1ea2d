package main

import (
	"context"
	"net/http"
	"os"

	"github.com/hashicorp/go-hclog"
	rungroup "github.com/oklog/run"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/fleet"
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
	ccfg, err := cfg.Coordinator(log.Named("zk"))
	if err != nil {
		return err
	}
	store, reg, closeAll, err := openStoreAndMetrics(cfg, "drover-scheduler-"+cfg.Worker.Name, log)
	if err != nil {
		return err
	}
	defer closeAll()
	m, err := fleet.NewMember(fleet.MemberConfig{
		Name: cfg.Worker.Name, Coordinator: ccfg, Scheduler: schedulerRole(cfg, store, reg, log),
		Logger: log, Metrics: reg,
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if m.Ready() != nil {
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
	g.Add(func() error { return m.Run(sctx) }, func(error) { cancel() })
	g.Add(func() error { <-ctx.Done(); return nil }, func(error) {})
	return g.Run()
}

// schedulerRole runs the scheduler while this process leads the scheduler
// election (in `drover scheduler` and `drover worker --scheduler` alike).
func schedulerRole(cfg *config.Config, store *queue.Store, reg *metrics.Registry, log hclog.Logger) fleet.SchedulerFunc {
	return func(ctx context.Context, lead *fleet.SchedulerLeadership) error {
		sch, err := scheduler.New(scheduler.Config{
			Store: store.Schedules(),
			Enqueuer: scheduler.EnqueuerFunc(func(ctx context.Context, m *drover.Message) (bool, error) {
				r, err := store.Producer().Enqueue(ctx, m)
				if err == nil && !r.Duplicate {
					reg.IncrCounter(metrics.EnqueuedTotal, 1, metrics.L("queue", m.Queue))
				}
				return r.Duplicate, err
			}),
			Leadership:   lead,
			Logger:       log,
			Tracer:       store.Tracer(),
			Metrics:      reg,
			PollInterval: cfg.Scheduler.PollInterval,
			MisfireGrace: cfg.Scheduler.MisfireGrace,
			CatchupLimit: cfg.Scheduler.CatchupLimit,
		})
		if err != nil {
			return err
		}
		return sch.Run(ctx)
	}
}
