package coordinator

import "github.com/drover-dev/drover"

// The session's roles. A Session keeps only its lifetime (Done, Err,
// State, Close, ...); what a caller does with it goes through one of these
// small values, each sharing the one session and its one watch hub:
//
//	sess.Group()        membership, elections and the cluster's counts
//	sess.Assignments()  the assignment: read, watched, written by the leader
//	sess.Claims()       claims, commits, owners and offsets
//	sess.Queues()       queue configurations, the registry, queue views
//	sess.Families()     queue families
//	sess.Pauses()       pauses of queues, members and everything
//
// A role is a value as cheap as the pointer it holds: take it once or per
// call, as reads best. Each role's methods behave as documented on them;
// none outlives the session (after Done, each returns an error wrapping
// drover.ErrSessionLost, Close included).

// Group is the session's role among the members: joining, listing and
// watching members, electing leaders, counting the cluster.
type Group struct{ s *Session }

// Assignments reads and watches the assignment; the rebalance leader writes
// it through an AssignmentWriter.
type Assignments struct{ s *Session }

// Claims takes claims on queues and commits their offsets; it also reads,
// resets and drops owners and offsets for operators.
type Claims struct{ s *Session }

// Queues creates, reads and watches queue configurations and the registry.
type Queues struct{ s *Session }

// Families creates, reads and watches queue families.
type Families struct{ s *Session }

// Pauses sets, clears, reads and watches pauses.
type Pauses struct{ s *Session }

// Group returns the session's membership and elections role.
func (s *Session) Group() Group { return Group{s} }

// Assignments returns the session's assignment role.
func (s *Session) Assignments() Assignments { return Assignments{s} }

// Claims returns the session's claims and offsets role.
func (s *Session) Claims() Claims { return Claims{s} }

// Queues returns the session's queue configurations and registry role.
func (s *Session) Queues() Queues { return Queues{s} }

// Families returns the session's queue families role.
func (s *Session) Families() Families { return Families{s} }

// Pauses returns the session's pauses role.
func (s *Session) Pauses() Pauses { return Pauses{s} }

// Claims commits many claims' offsets at once (see CommitMany).
var _ drover.ClaimCommitter = Claims{}
