package fleet

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
)

// Contact is what the task lease's renewal rule needs of a session: its
// end, and when it last heard from ZooKeeper against how long it may stay
// silent. MemberSession has it; *coordinator.Session implements it.
type Contact interface {
	// Err is nil while the session lives.
	Err() error
	// LastHeard is when bytes last arrived from a ZooKeeper server.
	LastHeard() time.Time
	// SessionTimeout is the session timeout T.
	SessionTimeout() time.Duration
}

// MayRenewLease is the task lease's renewal rule: s (nil between sessions)
// lives and has heard from ZooKeeper less than T/2 before now. At exactly
// LastHeard + T/2 it may not. So a renewal at r means the server heard
// from us after r − T/2, and the lease kills every task by r + T/3 + T/24
// (bound and grace): before the server can expire the session at T
// (docs/semantics.md, "One owner at a time").
func MayRenewLease(s Contact, now time.Time) bool {
	return s != nil && s.Err() == nil && now.Sub(s.LastHeard()) < s.SessionTimeout()/2
}

// LeaseRenewerConfig configures LeaseRenewer.
type LeaseRenewerConfig struct {
	// Session returns the current session, nil between sessions
	// (Current.Contact). Required.
	Session func() Contact
	// Renew renews the task lease (executor.Lease.Renew). Required.
	Renew func() error
	// Now is the clock LastHeard is compared with. Default time.Now.
	Now    func() time.Time
	Logger hclog.Logger // default: null logger
}

// LeaseRenewer returns the worker's Config.Renew: it renews the task lease
// when MayRenewLease allows it; the worker calls it only while no freeze is
// pending. A failed renewal is logged once.
func LeaseRenewer(cfg LeaseRenewerConfig) (func(), error) {
	if cfg.Session == nil || cfg.Renew == nil {
		return nil, fmt.Errorf("lease renewer: %w: Session and Renew are required", drover.ErrInvalidConfig)
	}
	now, log := cfg.Now, cfg.Logger
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	var warned atomic.Bool
	return func() {
		if !MayRenewLease(cfg.Session(), now()) {
			return
		}
		if err := cfg.Renew(); err != nil && !warned.Swap(true) {
			log.Error("cannot renew the task lease", "error", err)
		}
	}, nil
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
