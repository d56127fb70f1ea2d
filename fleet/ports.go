package fleet

import (
	"context"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// The interfaces in this file are what the fleet layer needs from the
// coordination service. zookeeper.go adapts *coordinator.Session to them;
// the tests use fakes. The data types (coordinator.AssignmentNode,
// QueueEntry, MemberNode, Owner) are plain values.

// Lifetime is a coordination session's end.
type Lifetime interface {
	// Done is closed when the session is lost.
	Done() <-chan struct{}
	// Err is nil while the session lives, then an error wrapping
	// drover.ErrSessionLost.
	Err() error
}

// Claim is a claim the reconciler holds: the runtime's drover.Claim plus
// the way to give up an owner node without writing the offset, and to learn
// of the claim's end without a goroutine waiting on Done.
type Claim interface {
	drover.Claim
	// Abandon deletes this session's owner node, if it still holds it,
	// keeping the committed offset.
	Abandon(ctx context.Context) error
	// OnEnd arranges for f to be called once, in its own goroutine, when
	// the claim ends (at once when it has ended already); a later call
	// replaces an f not called yet.
	OnEnd(f func())
}

// Claimer takes queues (DESIGN.md §5 step 3).
type Claimer interface {
	// Claim takes ownership of queue; an error wrapping drover.ErrNotOwner
	// means another session still owns it.
	Claim(ctx context.Context, queue string, owner coordinator.Owner) (Claim, error)
	// WaitReleased blocks until the queue has no owner node.
	WaitReleased(ctx context.Context, queue string) error
	// DropOwnOrphan deletes an owner node of this session for which no
	// Claim exists (a claim whose reply was lost).
	DropOwnOrphan(ctx context.Context, queue string) (bool, error)
}

// ConfigWatch follows the configurations of the queues a member owns.
type ConfigWatch interface {
	// Read reads a queue's configuration and follows it from now on. A
	// missing or corrupt config comes back as an entry with Err set; the
	// error return is for a read that failed.
	Read(ctx context.Context, queue string) (coordinator.QueueEntry, error)
	// Forget stops following a queue.
	Forget(queue string)
	// Changes delivers a followed queue's entry after each change; it is
	// closed when the watch ends.
	Changes() <-chan coordinator.QueueEntry
}

// QueueConfigs watches the configurations of the queues a member owns.
type QueueConfigs interface {
	// WatchQueueConfigs starts a ConfigWatch that follows no queue yet,
	// running until ctx ends or the session is lost.
	WatchQueueConfigs(ctx context.Context) ConfigWatch
}

// ReconcilerSession is one session as the reconciler uses it.
type ReconcilerSession interface {
	Lifetime
	Claimer
	QueueConfigs
	// WatchShare delivers member's share of the assignment (its queues
	// only) now and after each change of it; a rebalance that leaves the
	// share alone delivers nothing (DESIGN.md §10).
	WatchShare(ctx context.Context, member string) <-chan coordinator.AssignmentNode
}

// Runner runs the queues a member owns: the worker, seen from the
// reconciler. *worker.Worker implements it. Methods are called from the
// reconciler's goroutines.
type Runner interface {
	// Start begins running a claimed queue. The runner commits and finally
	// releases through the claim. It must not block on I/O (the
	// reconciler's one goroutine calls it; worker.Worker routes the
	// queue's wake-ups in the background).
	Start(cfg drover.QueueConfig, claim drover.Claim) error
	// StopQueues gives queues up gracefully, all at once: none starts a
	// task from this call, the running ones end, then each claim is
	// released. It blocks until every queue is released (or its release
	// failed), calling stopped with each queue and its release's error on
	// the way, on the caller's goroutine. kind bounds the wait:
	// drover.StopLeave drains up to the drain timeout from the call, then
	// kills; drover.StopPlanned waits for each running task's own timeout
	// and kills nothing. A StopLeave of a queue whose planned stop is in
	// progress cuts that wait to the drain timeout from its own call.
	// Cancelling ctx kills the tasks at once (the session is lost).
	StopQueues(ctx context.Context, queues []string, kind drover.StopKind, stopped func(queue string, err error))
	// Abort drops queues at once without writing anything for them (the
	// session is lost): every one is told first, then all are awaited. It
	// blocks until their tasks are gone.
	Abort(queues ...string)
	// Configure hands a running queue its new configuration.
	Configure(cfg drover.QueueConfig) error
}

// Leadership is one term of leadership in an election.
type Leadership interface {
	// Done is closed when the leadership ends; it never restarts.
	Done() <-chan struct{}
	// Err is nil while leading, then why the leadership ended.
	Err() error
	// Act blocks until the leader may act (leadership held, session
	// connected) and returns a context cancelled as soon as it may not.
	Act(ctx context.Context) (context.Context, context.CancelFunc, error)
	// Resign ends the leadership. Idempotent.
	Resign(ctx context.Context) error
}

// Elector enters one election.
type Elector interface {
	// Campaign blocks until candidate leads and returns the leadership.
	Campaign(ctx context.Context, candidate string) (Leadership, error)
}

// AssignmentWriter writes /assignment for one leadership term.
type AssignmentWriter interface {
	// Epoch is the fencing epoch this term holds.
	Epoch() int32
	// Current is the assignment as last read or written.
	Current() drover.Assignment
	// Write stores next (its generation is set to Current's plus one),
	// fenced by the term's epoch.
	Write(ctx context.Context, next drover.Assignment) (drover.Assignment, error)
	// Update adds placed (queue → member, queues not assigned yet) to
	// Current and takes removed out of it (queues it does not hold are
	// ignored) as one new generation, writing only what those queues
	// need: placement and removal without a whole computation (placement.go).
	Update(ctx context.Context, placed map[string]string, removed []string) (drover.Assignment, error)
}

// LeaderSession is one session as the rebalance leader uses it.
type LeaderSession interface {
	Lifetime
	// NewAssignmentWriter starts a term: it bumps the epoch and reads the
	// current assignment.
	NewAssignmentWriter(ctx context.Context, lead Leadership) (AssignmentWriter, error)
	// WatchMembers delivers the member list now and after each change.
	WatchMembers(ctx context.Context) <-chan []coordinator.MemberNode
	// WatchRegistry delivers the queue registry (every queue's name, weight
	// and tags, from the registry's bucket nodes: no queue config is read)
	// now and after each change.
	WatchRegistry(ctx context.Context) <-chan coordinator.Registry
}

// Membership is this session's member node.
type Membership interface {
	// Path is the node's full path, written into owner nodes.
	Path() string
	// Update replaces the node's data with info (a change of the member's
	// Redis health).
	Update(ctx context.Context, info drover.Member) error
	// Leave deletes the node; a node already gone is not an error.
	Leave(ctx context.Context) error
}

// MemberSession is one session as a Member lives it: the session's own
// lifetime and state, and one port for each consumer the member hands it
// to (the reconciler, the rebalance leader, the group it joins, the pause
// flags). zookeeper.go takes each from a *coordinator.Session.
type MemberSession interface {
	Lifetime
	// State is the session's state now; Confirm proves it alive with a
	// fresh round trip.
	State() coordinator.SessionState
	Confirm(ctx context.Context) error
	// LastHeard and SessionTimeout: the task lease's renewal rule
	// (Contact, MayRenewLease).
	LastHeard() time.Time
	SessionTimeout() time.Duration
	// SessionID names the session in logs.
	SessionID() int64
	// Close ends the session (its ephemeral nodes go with it).
	Close() error
	// Group joins the fleet and enters its elections.
	Group() Group
	// Pauses reads and writes the pause flags.
	Pauses() PauseFlags
	// Reconciler is the session as the reconciler uses it.
	Reconciler() ReconcilerSession
	// Leader is the session as the rebalance leader uses it.
	Leader() LeaderSession
}

// Group is a session's part in the fleet: its member node and elections.
type Group interface {
	// Join registers info as a member for the life of the session.
	Join(ctx context.Context, info drover.Member) (Membership, error)
	// Elector returns the election called name (coordinator.Election*).
	Elector(name string) (Elector, error)
}

// PauseFlags are the pause flags (coordinator.Pauses).
type PauseFlags interface {
	// Watch delivers the pause flags now and after each change, until ctx
	// ends or the session is lost.
	Watch(ctx context.Context) <-chan coordinator.PauseSet
	// Set writes one pause flag (an ordered queue parking itself at a
	// failed head).
	Set(ctx context.Context, scope drover.PauseScope, name string, p drover.Pause) error
}

// FamilyRegistrar registers and retires the queues of queue families
// beside each rebalance leadership term (*registrar.Registrar): the leader
// hands it each registry snapshot and places the queues it created at
// once.
type FamilyRegistrar interface {
	// Run runs beside one leadership term until ctx ends.
	Run(ctx context.Context) error
	// Observe hands over a registry snapshot the leader read.
	Observe(reg coordinator.Registry)
	// Created receives a notice when queues were created; TakeCreated
	// returns them (those created since its last call).
	Created() <-chan struct{}
	TakeCreated() []drover.QueueConfig
}

// pendingFor is how long a queue placed from the registrar counts as
// registered while no registry snapshot lists it (placement.go): the
// registrar's own bound for a name it sent (registrar.pendingFor).
const pendingFor = time.Minute

// Connect opens one session. cfg.OnStateChange is the member's: a session
// calls it with each change of its state, Lost last. A Member calls
// Connect once per session, with backoff between failures; the default is
// ConnectZooKeeper.
type Connect func(ctx context.Context, cfg coordinator.Config) (MemberSession, error)
