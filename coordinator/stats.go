package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// ClusterStats are the fleet-wide counts (Group.Stats) the rebalance leader publishes as
// gauges.
type ClusterStats struct {
	Members         int  // member nodes
	Queues          int  // registered queues
	Owned           int  // queues with an owner node
	SchedulerLeader bool // /election/scheduler has a candidate (the lowest leads)
}

// Unowned is the number of registered queues without an owner.
func (c ClusterStats) Unowned() int { return max(c.Queues-c.Owned, 0) }

// bucketCountTTL is how long Group.Stats reuses a queue count taken from
// the bucket nodes' stats (1,024 reads) when no registry watch runs.
const bucketCountTTL = time.Minute

// statsCache holds the queue counts Group.Stats reuses: the count of a
// registry watch running on the session (the rebalance leader's, which
// knows every queue already), else the last count from the bucket stats.
type statsCache struct {
	mu      sync.Mutex
	watches map[*registryWatch]int // running registry watches → queues last delivered
	ended   map[*registryWatch]bool
	counted int // queues, from the bucket stats at countAt
	countAt time.Time
}

func (c *statsCache) registryRead(r *registryWatch, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended[r] {
		return
	}
	if c.watches == nil {
		c.watches = map[*registryWatch]int{}
	}
	c.watches[r] = n
}

func (c *statsCache) registryEnded(r *registryWatch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.watches, r)
	if c.ended == nil {
		c.ended = map[*registryWatch]bool{}
	}
	c.ended[r] = true
}

// queues returns a queue count that needs no read, if there is one.
func (c *statsCache) queues(now time.Time) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.watches {
		return n, true
	}
	if !c.countAt.IsZero() && now.Sub(c.countAt) < bucketCountTTL {
		return c.counted, true
	}
	return 0, false
}

func (c *statsCache) store(n int, at time.Time) {
	c.mu.Lock()
	c.counted, c.countAt = n, at
	c.mu.Unlock()
}

// Stats counts members, queues, owners and scheduler candidates from
// the nodes' child counts (Stat.NumChildren), never from listings: a listing
// of /owners at 100,000 queues would pass a megabyte. Its cost is three
// reads. The queue count comes from the registry watch when one runs on
// this session (the rebalance leader's: it knows every queue already);
// otherwise from the bucket nodes' stats (one read per bucket), reused for
// a minute.
func (g Group) Stats(ctx context.Context) (ClusterStats, error) {
	s := g.s
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
	if st.Queues, err = s.countQueues(ctx, count); err != nil {
		return st, err
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

// countQueues returns the registry's queue count: from the stats cache, or
// from the bucket nodes' child counts.
func (s *Session) countQueues(ctx context.Context, count func(string) (int, error)) (int, error) {
	if n, ok := s.stats.queues(time.Now()); ok {
		return n, nil
	}
	at := time.Now()
	buckets, err := bounded(ctx, s, func(c zkConn) ([]string, error) {
		names, _, err := c.Children(s.path(queuesDir))
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		return names, err
	})
	if err != nil {
		return 0, fmt.Errorf("cluster stats: queues: %w", err)
	}
	type res struct {
		n   int
		err error
	}
	total := 0
	for _, r := range parallelMap(ctx, buckets, func(b string) res {
		n, err := count(s.path(queuesDir, b))
		return res{n, err}
	}) {
		if r.err != nil {
			return 0, fmt.Errorf("cluster stats: queues: %w", r.err)
		}
		total += r.n
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("cluster stats: queues: %w", err)
	}
	s.stats.store(total, at)
	return total, nil
}
