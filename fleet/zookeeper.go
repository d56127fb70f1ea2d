package fleet

import (
	"context"
	"fmt"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// A *coordinator.Session as the fleet's ports. Each port is one or two of
// the session's roles (coordinator/roles.go) taken as they are: a port
// method whose signature is the role's is the role's own method, promoted
// by embedding, so adding one the member uses is the port's line only. The
// methods below exist only where a port returns one of its interfaces for
// a concrete coordinator type (a claim, a member node, a leadership, a
// config watch), which Go does not convert by itself (docs/decisions.md,
// "Issue 42: ports sized by their consumer").

var (
	_ MemberSession     = zkSession{}
	_ ReconcilerSession = zkReconciler{}
	_ LeaderSession     = zkLeader{}
	_ Group             = zkGroup{}
	_ PauseFlags        = coordinator.Pauses{}
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
	return zkSession{s}, nil
}

// SessionPorts is an open session as the fleet's ports: for callers that
// connect their own session (the scale bench, through a proxy) and run the
// rebalancer and reconciler on it.
func SessionPorts(s *coordinator.Session) MemberSession { return zkSession{s} }

// zkSession is a MemberSession: the session's lifetime and state are its
// own; each consumer's port is built from its roles.
type zkSession struct{ *coordinator.Session }

func (z zkSession) Group() Group       { return zkGroup{z.Session.Group()} }
func (z zkSession) Pauses() PauseFlags { return z.Session.Pauses() }

func (z zkSession) Reconciler() ReconcilerSession {
	return zkReconciler{Session: z.Session, Claims: z.Session.Claims(), Assignments: z.Session.Assignments()}
}

func (z zkSession) Leader() LeaderSession {
	return zkLeader{Session: z.Session, Group: z.Session.Group(), Queues: z.Session.Queues()}
}

// zkReconciler is a ReconcilerSession: Done and Err are the session's,
// WaitReleased and DropOwnOrphan the claims role's, WatchShare the
// assignment role's.
type zkReconciler struct {
	*coordinator.Session
	coordinator.Claims
	coordinator.Assignments
}

// Claim claims queue.
func (r zkReconciler) Claim(ctx context.Context, queue string, owner coordinator.Owner) (Claim, error) {
	c, err := r.Claims.Claim(ctx, queue, owner)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// WatchQueueConfigs starts a watch of the owned queues' configurations.
func (r zkReconciler) WatchQueueConfigs(ctx context.Context) ConfigWatch {
	return r.Session.Queues().WatchConfigs(ctx)
}

// zkLeader is a LeaderSession: Done and Err are the session's,
// WatchMembers the group role's, WatchRegistry the queues role's.
type zkLeader struct {
	*coordinator.Session
	coordinator.Group
	coordinator.Queues
}

// NewAssignmentWriter takes over /assignment for lead, a leadership won
// through Elector.
func (l zkLeader) NewAssignmentWriter(ctx context.Context, lead Leadership) (AssignmentWriter, error) {
	zl, ok := lead.(*coordinator.Leadership)
	if !ok {
		return nil, fmt.Errorf("take over assignment: %w: not a ZooKeeper leadership", drover.ErrNotLeader)
	}
	w, err := l.Session.Assignments().NewWriter(ctx, zl)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// zkGroup is the group role as a Group.
type zkGroup struct{ coordinator.Group }

// Join registers info as a member.
func (g zkGroup) Join(ctx context.Context, info drover.Member) (Membership, error) {
	mb, err := g.Group.Join(ctx, info)
	if err != nil {
		return nil, err
	}
	return mb, nil
}

// Elector returns the election called name as an Elector.
func (g zkGroup) Elector(name string) (Elector, error) {
	el, err := g.Group.Election(name)
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
