package fleet

import (
	"context"
	"fmt"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// ZooKeeper adapts a coordinator session to the fleet's interfaces. The
// only translation is of concrete result types (*coordinator.Claim,
// *coordinator.Leadership) into the interfaces.
type ZooKeeper struct{ *coordinator.Session }

var (
	_ ReconcilerSession = ZooKeeper{}
	_ LeaderSession     = ZooKeeper{}
	_ MemberSession     = ZooKeeper{}
	_ Connect           = ConnectZooKeeper
	_ Membership        = (*coordinator.Membership)(nil)
	_ Claim             = (*coordinator.Claim)(nil)
	_ Leadership        = (*coordinator.Leadership)(nil)
	_ ConfigWatch       = (*coordinator.ConfigWatch)(nil)
)

// ConnectZooKeeper opens a ZooKeeper session (coordinator.Connect): a
// Member's default Connect.
func ConnectZooKeeper(ctx context.Context, cfg coordinator.Config) (MemberSession, error) {
	s, err := coordinator.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return ZooKeeper{s}, nil
}

// Join registers info as a member.
func (z ZooKeeper) Join(ctx context.Context, info drover.Member) (Membership, error) {
	mb, err := z.Session.Group().Join(ctx, info)
	if err != nil {
		return nil, err
	}
	return mb, nil
}

// Claim claims queue.
func (z ZooKeeper) Claim(ctx context.Context, queue string, owner coordinator.Owner) (Claim, error) {
	c, err := z.Session.Claims().Claim(ctx, queue, owner)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// WatchQueueConfigs starts a watch of the owned queues' configurations.
func (z ZooKeeper) WatchQueueConfigs(ctx context.Context) ConfigWatch {
	return z.Session.Queues().WatchConfigs(ctx)
}

// NewAssignmentWriter takes over /assignment for lead, a leadership won
// through Elector.
func (z ZooKeeper) NewAssignmentWriter(ctx context.Context, lead Leadership) (AssignmentWriter, error) {
	l, ok := lead.(*coordinator.Leadership)
	if !ok {
		return nil, fmt.Errorf("take over assignment: %w: not a ZooKeeper leadership", drover.ErrNotLeader)
	}
	w, err := z.Session.Assignments().NewWriter(ctx, l)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Elector returns the election called name as an Elector.
func (z ZooKeeper) Elector(name string) (Elector, error) {
	el, err := z.Session.Group().Election(name)
	if err != nil {
		return nil, err
	}
	return zkElection{el}, nil
}

type zkElection struct{ *coordinator.Election }

func (e zkElection) Campaign(ctx context.Context, candidate string) (Leadership, error) {
	l, err := e.Election.Campaign(ctx, candidate)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// The rest delegates to the session's roles (coordinator.Session keeps
// only its lifetime; see docs/decisions.md, "coordinator by role").

// WaitReleased blocks until queue has no owner node.
func (z ZooKeeper) WaitReleased(ctx context.Context, queue string) error {
	return z.Session.Claims().WaitReleased(ctx, queue)
}

// DropOwnOrphan deletes an owner node of this session without a Claim.
func (z ZooKeeper) DropOwnOrphan(ctx context.Context, queue string) (bool, error) {
	return z.Session.Claims().DropOwnOrphan(ctx, queue)
}

// DropOffset deletes a retired queue's offset node once unowned.
func (z ZooKeeper) DropOffset(ctx context.Context, queue string) (bool, error) {
	return z.Session.Claims().DropOffset(ctx, queue)
}

// WatchShare delivers member's share of the assignment.
func (z ZooKeeper) WatchShare(ctx context.Context, member string) <-chan coordinator.AssignmentNode {
	return z.Session.Assignments().WatchShare(ctx, member)
}

// WatchMembers delivers the member list now and after each change.
func (z ZooKeeper) WatchMembers(ctx context.Context) <-chan []coordinator.MemberNode {
	return z.Session.Group().WatchMembers(ctx)
}

// WatchRegistry delivers the queue registry now and after each change.
func (z ZooKeeper) WatchRegistry(ctx context.Context) <-chan coordinator.Registry {
	return z.Session.Queues().WatchRegistry(ctx)
}

// CreateQueues registers queues in batches; existing ones are kept.
func (z ZooKeeper) CreateQueues(ctx context.Context, cfgs []drover.QueueConfig) (int, error) {
	return z.Session.Queues().CreateMany(ctx, cfgs)
}

// RetireQueues removes queues of families from the registry where empty
// says so.
func (z ZooKeeper) RetireQueues(ctx context.Context, cands []coordinator.RetireCandidate, empty func(context.Context, []coordinator.RetireCandidate) ([]bool, error)) ([]bool, error) {
	return z.Session.Queues().RetireMany(ctx, cands, empty)
}

// Family reads one family.
func (z ZooKeeper) Family(ctx context.Context, name string) (coordinator.FamilyEntry, error) {
	return z.Session.Families().Get(ctx, name)
}

// ReapplyFamily gives queues registered with cfgs the family's current
// configuration where they still hold cfgs.
func (z ZooKeeper) ReapplyFamily(ctx context.Context, f drover.FamilyConfig, cfgs []drover.QueueConfig) (updated, kept int, err error) {
	return z.Session.Families().Reapply(ctx, f, cfgs)
}

// WatchFamilies delivers every family now and after each change.
func (z ZooKeeper) WatchFamilies(ctx context.Context) <-chan drover.Families {
	return z.Session.Families().Watch(ctx)
}

// WatchPauses delivers the pause flags now and after each change.
func (z ZooKeeper) WatchPauses(ctx context.Context) <-chan coordinator.PauseSet {
	return z.Session.Pauses().Watch(ctx)
}

// SetPause writes one pause flag.
func (z ZooKeeper) SetPause(ctx context.Context, scope drover.PauseScope, name string, p drover.Pause) error {
	return z.Session.Pauses().Set(ctx, scope, name, p)
}
