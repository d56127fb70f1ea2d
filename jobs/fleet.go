package jobs

import (
	"context"
	"errors"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// SessionFleet is the Fleet of a ZooKeeper session: the owner node, the
// owner's member node (for its admin address) and the offset node.
type SessionFleet struct{ Session *coordinator.Session }

var _ Fleet = SessionFleet{}

// QueueOwner reads who owns queue and its committed offset.
func (f SessionFleet) QueueOwner(ctx context.Context, q string) (Owner, error) {
	var o Owner
	off, err := f.Session.Claims().Offset(ctx, q)
	switch {
	case err == nil:
		o.Offset = off.Offset.Position
	case !errors.Is(err, drover.ErrNotFound):
		return o, err
	}
	owner, err := f.Session.Claims().Owner(ctx, q)
	if errors.Is(err, drover.ErrNotFound) {
		return o, nil
	}
	if err != nil {
		return o, err
	}
	o.Member = owner.Owner.Member
	members, err := f.Session.Group().Members(ctx)
	if err != nil {
		return o, err
	}
	for _, m := range members {
		if m.Path == owner.Owner.MemberPath {
			o.AdminAddr = m.Member.AdminAddr
			return o, nil
		}
	}
	for _, m := range members {
		if m.Member.Name == o.Member {
			o.AdminAddr = m.Member.AdminAddr
		}
	}
	return o, nil
}

// QueuePause reads queue's own pause flag: nil when it has none.
func (f SessionFleet) QueuePause(ctx context.Context, q string) (*drover.Pause, error) {
	ps, err := f.Session.Pauses().Of(ctx, []string{q})
	if err != nil {
		return nil, err
	}
	p, ok := ps.Queues[q]
	if !ok {
		return nil, nil
	}
	return &p, nil
}
