package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// DropOwnOrphan deletes /owners/<queue> when it belongs to this session, and
// reports whether it did. Call it only when this process holds no Claim for
// the queue: the node is then an orphan — a claim whose reply was lost or
// abandoned — that would otherwise block the queue (WaitReleased would wait
// on this session's own node) for as long as the session lives.
func (c Claims) DropOwnOrphan(ctx context.Context, queue string) (bool, error) {
	s := c.s
	p, err := s.queuePath(ownersDir, queue)
	if err != nil {
		return false, fmt.Errorf("drop orphan owner: %w", err)
	}
	dropped, err := bounded(ctx, s, func(c zkConn) (bool, error) {
		exists, st, err := c.Exists(p)
		if err != nil || !exists || st.EphemeralOwner != s.id || c.SessionID() != s.id {
			return false, err
		}
		if err := c.Delete(p, st.Version); err != nil {
			return false, err
		}
		return true, nil
	})
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("drop orphan owner of %s: %w", queue, err)
	}
	if dropped {
		s.log.Warn("dropped an orphan owner node of this session", "queue", queue)
	}
	return dropped, nil
}
