package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Pinger asks Redis for a PONG over a connection of its own (one per node),
// never one of a Store's pool. A member's health check (fleet.RedisHealth)
// and its readiness probe ask whether Redis answers this process; through
// the Store's pool they asked whether a connection was free, and under load
// thousands of requests queue for the pool's connections: the fleet bench's
// members, behind, timed out their pings behind 900 to 2,700 waiting
// requests while Redis answered, gave their queues up (25,000 each) and took
// them back seconds later (docs/decisions.md, "Issue 43: the health ping
// has a connection of its own"). Kafka's consumers send their heartbeats
// from a thread of their own for the same reason (KIP-62).
type Pinger struct {
	rdb redis.UniversalClient
}

// NewPinger returns a Pinger for the deployment o describes (standalone,
// Sentinel or Cluster), with o's timeouts and one connection per node; the
// client name, when set, gets "-health" appended. It does not connect: the
// first Ping does. The caller closes it.
func NewPinger(o ClientOptions) (*Pinger, error) {
	o.PoolSize = 1
	if o.ClientName != "" {
		o.ClientName += "-health"
	}
	rdb, err := NewClient(o)
	if err != nil {
		return nil, err
	}
	return &Pinger{rdb: rdb}, nil
}

// Ping asks Redis for a PONG; it fails when the server does not answer
// within ctx (or the read timeout).
func (p *Pinger) Ping(ctx context.Context) error {
	if err := p.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: ping: %w", err)
	}
	return nil
}

// Close closes the Pinger's connections.
func (p *Pinger) Close() error { return p.rdb.Close() }
