package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// Verify asks the server whether the claim still holds: the owner node is
// ours at the version we hold, and the offset node's version is the one we
// last wrote. An operator's offset reset (ResetOffset with AllowOwned, on a
// paused queue) bumps that version; an idle owner that never commits would
// not notice otherwise. A claim that does not hold is fenced: Verify returns
// an error wrapping drover.ErrFenced and the claim is over. Other errors
// (the server is unreachable) leave the claim as it is.
func (c *Claim) Verify(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended != nil {
		return c.ended
	}
	if c.pending != nil {
		_, err := c.resolvePending(ctx)
		return err
	}
	type stats struct{ owner, offset *zk.Stat }
	ownerPath, offsetPath := c.ownerPath(), c.offsetPath()
	st, err := bounded(ctx, c.s, func(conn zkConn) (stats, error) {
		ok, so, err := conn.Exists(ownerPath)
		if err != nil || !ok {
			return stats{}, err
		}
		_, sf, err := conn.Exists(offsetPath)
		return stats{so, sf}, err
	})
	switch {
	case errors.Is(err, drover.ErrSessionLost):
		return c.fence(err)
	case err != nil:
		return fmt.Errorf("verify claim of %s: %w", c.queue, err)
	case st.owner == nil:
		return c.fence(fmt.Errorf("%w: the owner node of %s is gone", drover.ErrFenced, c.queue))
	case st.owner.EphemeralOwner != c.s.id || st.owner.Version != c.ownerVersion:
		return c.fence(fmt.Errorf("%w: the owner node of %s belongs to another session", drover.ErrFenced, c.queue))
	case st.offset == nil || st.offset.Version != c.offsetVersion:
		return c.fence(fencedError(c.offsetVersion))
	}
	return nil
}
