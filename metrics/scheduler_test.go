package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/scheduler/schedulertest"
)

// oneTerm is a Leadership granting a single term, which ends when end is
// closed; the next Lead fails, so Run returns.
type oneTerm struct {
	began chan struct{}
	end   chan struct{}
}

func (l *oneTerm) Lead(ctx context.Context) (context.Context, error) {
	select {
	case <-l.began:
		return nil, errors.New("no second term")
	default:
	}
	close(l.began)
	term, cancel := context.WithCancel(ctx)
	go func() { <-l.end; cancel() }()
	return term, nil
}

// TestSchedulerMetricsComeOutUnderCatalogNames runs package scheduler on a
// Registry, as the drover binary does, and checks the names it writes are
// the documented ones.
func TestSchedulerMetricsComeOutUnderCatalogNames(t *testing.T) {
	t.Parallel()
	r := newPrometheus(t, metrics.SetupConfig{})
	ctx := context.Background()
	store := schedulertest.NewMemStore()
	err := scheduler.NewManager(store).Add(ctx, scheduler.Definition{
		Name: "nightly", Queue: "reports", Task: "build",
		Schedule: scheduler.Spec{Type: scheduler.TypeCron, Expr: "5 4 * * *", Timezone: "UTC"},
	})
	if err != nil {
		t.Fatalf("add schedule: %v", err)
	}
	lead := &oneTerm{began: make(chan struct{}), end: make(chan struct{})}
	s, err := scheduler.New(scheduler.Config{
		Store:      store,
		Enqueuer:   scheduler.EnqueuerFunc(func(context.Context, *drover.Message) (bool, error) { return false, nil }),
		Leadership: lead,
		Clock:      testkit.NewClock(time.Date(2030, 6, 3, 4, 5, 0, 0, time.UTC)),
		Metrics:    r,
	})
	if err != nil {
		t.Fatalf("new scheduler: %v", err)
	}
	if _, err := s.Tick(ctx); err != nil {
		t.Fatalf("tick: %v", err)
	}
	sc := scrapeRegistry(t, r)
	sc.want(t, `drover_schedule_fires{group="reports"}`, "1")
	sc.want(t, `drover_schedule_lateness_seconds_count{group="reports"}`, "1")

	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-lead.began
	testkit.Eventually(t, "drover_scheduler_leader 1 while leading", func() bool {
		return scrapeRegistry(t, r).samples["drover_scheduler_leader"] == "1"
	})
	close(lead.end)
	if err := <-done; err == nil {
		t.Fatalf("want Run to end with the leadership's error, have nil")
	}
	sc = scrapeRegistry(t, r)
	sc.want(t, "drover_scheduler_leader", "0")

	kinds := map[string]string{}
	for _, d := range metrics.Catalog() {
		kinds[metrics.PrometheusName(d.Name)] = string(d.Kind)
	}
	for family, typ := range sc.types {
		if len(family) > 7 && family[:7] == "drover_" && kinds[family] != typ {
			t.Errorf("scheduler exports %s %s: want it in the catalog with that kind, have %q", typ, family, kinds[family])
		}
	}
}
