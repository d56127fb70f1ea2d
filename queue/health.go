package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Ping asks Redis for a PONG; it fails when the server does not answer
// within ctx (or the client's read timeout). It says whether the Store can
// reach Redis now, for readiness probes and error messages. A failure says
// how the client's connection pool stood, so that a reader can tell a
// server that did not answer from a pool whose connections were all busy.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: ping: %w (%s)", err, poolState(s.rdb.PoolStats()))
	}
	return nil
}

// poolState describes a client's connection pool for an error message.
func poolState(st *redis.PoolStats) string {
	if st == nil {
		return "no pool stats"
	}
	return fmt.Sprintf("pool: %d connections, %d idle, %d requests waiting for one; %d waits timed out since start",
		st.TotalConns, st.IdleConns, st.PendingRequests, st.Timeouts)
}
