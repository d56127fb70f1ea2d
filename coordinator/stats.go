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

// ClusterStats counts members, queues, owners and scheduler candidates from
// the nodes' child counts (Stat.NumChildren), never from listings: a listing
// of /owners at 100,000 queues would pass a megabyte. Its cost is one read
// per registry bucket plus three.
func (s *Session) ClusterStats(ctx context.Context) (ClusterStats, error) {
	count := func(p string) (int, error) {
		return bounded(ctx, s, func(c zkConn) (int, error) {
			exists, st, err := c.Exists(p)
			if err != nil || !exists {
				return 0, err
			}
			return int(st.NumChildren), nil
		})
	}
	var st ClusterStats
	var err error
	if st.Members, err = count(s.path(membersDir)); err != nil {
		return st, fmt.Errorf("cluster stats: members: %w", err)
	}
	buckets, err := bounded(ctx, s, func(c zkConn) ([]string, error) {
		names, _, err := c.Children(s.path(queuesDir))
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		return names, err
	})
	if err != nil {
		return st, fmt.Errorf("cluster stats: queues: %w", err)
	}
	type res struct {
		n   int
		err error
	}
	for _, r := range parallelMap(ctx, buckets, func(b string) res {
		n, err := count(s.path(queuesDir, b))
		return res{n, err}
	}) {
		if r.err != nil {
			return st, fmt.Errorf("cluster stats: queues: %w", r.err)
		}
		st.Queues += r.n
	}
	if err := ctx.Err(); err != nil {
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
