package queue

import (
	"context"
	"fmt"
)

// Ping asks Redis for a PONG; it fails when the server does not answer
// within ctx (or the client's read timeout). It says whether the Store can
// reach Redis now, for readiness probes and error messages.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: ping: %w", err)
	}
	return nil
}
