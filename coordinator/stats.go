package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// ClusterStats are the fleet-wide counts the rebalance leader publishes as
// gauges.
type ClusterStats struct {
	Members         int  // member nodes
	Queues          int  // registered queues
	Owned           int  // queues with an owner node
	SchedulerLeader bool // /election/scheduler has a candidate (the lowest leads)
}

// Unowned is the number of registered queues without an owner.
func (c ClusterStats) Unowned() int { return max(c.Queues-c.Owned, 0) }

// ClusterStats counts members, queues, owners and scheduler candidates with
// four child listings: its cost does not depend on the queues' data.
func (s *Session) ClusterStats(ctx context.Context) (ClusterStats, error) {
	count := func(p string) (int, error) {
		return bounded(ctx, s, func(c zkConn) (int, error) {
			names, _, err := c.Children(p)
			if errors.Is(err, zk.ErrNoNode) {
				return 0, nil
			}
			return len(names), err
		})
	}
	var st ClusterStats
	var err error
	if st.Members, err = count(s.path(membersDir)); err != nil {
		return st, fmt.Errorf("cluster stats: members: %w", err)
	}
	if st.Queues, err = count(s.path(queuesDir)); err != nil {
		return st, fmt.Errorf("cluster stats: queues: %w", err)
	}
	if st.Owned, err = count(s.path(ownersDir)); err != nil {
		return st, fmt.Errorf("cluster stats: owners: %w", err)
	}
	n, err := count(s.path(electionDir, ElectionScheduler))
	if err != nil {
		return st, fmt.Errorf("cluster stats: scheduler election: %w", err)
	}
	st.SchedulerLeader = n > 0
	return st, nil
}
