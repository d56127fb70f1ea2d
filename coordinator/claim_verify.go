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
//
// Both nodes are read in one request coalesced with the session's other
// reads (read_batch.go): after a suspension a member verifies every claim
// it holds (worker/idle.go: 500 at a time), and two exists requests a
// claim were some 25,000 requests a member of the sparse fleet sent at
// once (docs/decisions.md, "Issue 43: claims verified in shared requests").
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
	res, err := c.s.reads.get(ctx, c.ownerPath(), c.offsetPath())
	switch {
	case errors.Is(err, drover.ErrSessionLost):
		return c.fence(err)
	case err != nil:
		return fmt.Errorf("verify claim of %s: %w", c.queue, err)
	}
	owner, offset := res[0], res[1]
	switch {
	case errors.Is(owner.err, zk.ErrNoNode):
		return c.fence(fmt.Errorf("%w: the owner node of %s is gone", drover.ErrFenced, c.queue))
	case owner.err != nil:
		return fmt.Errorf("verify claim of %s: %w", c.queue, owner.err)
	case owner.nd.stat.EphemeralOwner != c.s.id || owner.nd.stat.Version != c.ownerVersion:
		return c.fence(fmt.Errorf("%w: the owner node of %s belongs to another session", drover.ErrFenced, c.queue))
	case errors.Is(offset.err, zk.ErrNoNode):
		return c.fence(fencedError(c.offsetVersion))
	case offset.err != nil:
		return fmt.Errorf("verify claim of %s: %w", c.queue, offset.err)
	case offset.nd.stat.Version != c.offsetVersion:
		return c.fence(fencedError(c.offsetVersion))
	}
	return nil
}
