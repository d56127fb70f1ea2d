package fleet

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/metrics"
)

// LeaseRenewer returns the worker's Config.Renew: it renews the task lease
// (renew: executor.Lease.Renew) while the member's session (session returns
// it, nil between sessions) is not lost and has heard from ZooKeeper within
// half the session timeout; the worker calls it only while no freeze is
// pending. So a renewal at r means the server heard from us after r − T/2,
// and the lease kills every task by r + T/3 + T/24 (bound and grace): before
// the server can expire the session at T (docs/semantics.md). A failed
// renewal is logged once.
func LeaseRenewer(session func() *coordinator.Session, renew func() error, log hclog.Logger) func() {
	var warned atomic.Bool
	return func() {
		s := session()
		if s == nil || s.Err() != nil || time.Since(s.LastHeard()) >= s.SessionTimeout()/2 {
			return
		}
		if err := renew(); err != nil && !warned.Swap(true) {
			log.Error("cannot renew the task lease", "error", err)
		}
	}
}

// gaugeInterval is how often PublishGauges sets the gauges.
const gaugeInterval = 5 * time.Second

// PublishGauges sets the worker's gauges (publishWorker) every few seconds
// and, while this member leads the rebalance, the cluster's, into the
// member's Metrics, until ctx ends.
func (m *Member) PublishGauges(ctx context.Context, publishWorker func()) {
	t := time.NewTicker(gaugeInterval)
	defer t.Stop()
	for {
		publishWorker()
		if s := m.Session(); s != nil && m.Leading() {
			sctx, cancel := context.WithTimeout(ctx, gaugeInterval)
			st, err := s.Group().Stats(sctx)
			cancel()
			if err == nil {
				reg := m.cfg.Metrics
				reg.SetGauge(metrics.Members, float32(st.Members))
				reg.SetGauge(metrics.Queues, float32(st.Queues))
				reg.SetGauge(metrics.UnownedQueues, float32(st.Unowned()))
				reg.SetGauge(metrics.SchedulerLeader, boolGauge(st.SchedulerLeader))
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

func boolGauge(b bool) float32 {
	if b {
		return 1
	}
	return 0
}
