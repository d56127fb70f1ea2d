package rebalance

import (
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/drover-dev/drover"
)

// Errors returned by this package; callers branch with errors.Is.
var (
	// ErrUnknownStrategy: ByName was given a name no strategy answers to.
	ErrUnknownStrategy = errors.New("rebalance: unknown strategy")
	// ErrInvalidInput: an Input names a member or queue with an empty name,
	// or names one twice, or sets both Queues and Source.
	ErrInvalidInput = errors.New("rebalance: invalid input")
)

// Strategy names, as configured and as recorded in the assignment node.
const (
	StickyName     = "sticky"
	RangeName      = "range"
	RoundRobinName = "round-robin"
	// DefaultName is the strategy used when none is configured.
	DefaultName = StickyName
)

// Limits on the balancing values. Larger values are treated as the limit so
// that the exact integer arithmetic of the strategies cannot overflow: it
// stays exact while queues × members < 2³¹.
const (
	MaxCapacity = 1 << 16
	MaxWeight   = 1 << 16
)

// Strategy computes which member owns which queue. Implementations are pure:
// Assign reads nothing but its argument, keeps no state between calls and
// returns the same Result for the same Input, whatever the order of
// in.Members, in.Queues and their tags.
type Strategy interface {
	// Name is the name the strategy is configured by ("sticky").
	Name() string
	// Assign computes the target assignment. It fails only with an error
	// wrapping ErrInvalidInput.
	Assign(in Input) (Result, error)
}

// Input is what a strategy assigns from.
type Input struct {
	// Previous is the assignment in force (queue → member name). It may name
	// queues and members that no longer exist; those entries are ignored, as
	// are entries whose member is no longer eligible for the queue. Only
	// sticky reads it.
	Previous map[string]string
	// Members are the live members. Names must be unique and non-empty.
	Members []Member
	// Queues are the queues to assign. Names must be unique and non-empty.
	Queues []Queue
	// Idle, a hint, names queues known to have nothing running and no
	// backlog: moving one costs its members nothing. Among queues of equal
	// weight a member gives away, sticky gives these first; a queue not
	// named counts as busy. Only sticky reads it, and only looks it up.
	Idle map[string]bool
	// Source, when set, gives the queues instead of Queues, which must then
	// be empty; the same rules hold for its queues. A caller that keeps
	// many queues in a form of its own (the rebalance leader's registry)
	// hands them over this way without a copy as a []Queue.
	Source QueueSource
}

// QueueSource is a collection of queues that a strategy reads in place.
// Assign reads it once and keeps nothing of it past its return but the
// queue names in the Result.
type QueueSource interface {
	// Len is the number of queues All yields.
	Len() int
	// All yields every queue once, in any order.
	All() iter.Seq[Queue]
}

// Member is one candidate owner.
type Member struct {
	Name string
	// Capacity is the member's share of the load relative to the others
	// (executor slots). Values below 1 mean 1; above MaxCapacity, MaxCapacity.
	Capacity int
	// Tags the member offers; a queue may go only to a member that offers
	// every tag the queue requires.
	Tags []string
}

// Queue is one queue to assign.
type Queue struct {
	Name string
	// Weight is the queue's load. Values below 1 mean 1; above MaxWeight,
	// MaxWeight.
	Weight int
	// Tags the queue requires of its owner.
	Tags []string
}

// Result is a computed assignment.
type Result struct {
	// Queues maps every queue that has at least one eligible member to the
	// name of the member that owns it. It is never nil.
	Queues map[string]string
	// Unassignable lists, sorted, the queues no member is eligible for. They
	// appear nowhere in Queues.
	Unassignable []string
}

// FromMember returns the balancing view of a fleet member.
func FromMember(m drover.Member) Member {
	return Member{Name: m.Name, Capacity: m.Capacity, Tags: m.Tags}
}

// FromQueueConfig returns the balancing view of a queue's configuration.
func FromQueueConfig(c drover.QueueConfig) Queue {
	return Queue{Name: c.Name, Weight: c.Weight, Tags: c.Tags}
}

// Names returns the names ByName accepts, default first.
func Names() []string { return []string{StickyName, RangeName, RoundRobinName} }

// ByName returns the strategy called name: "sticky", "range" or
// "round-robin". An empty name means DefaultName. Any other name fails with
// an error wrapping ErrUnknownStrategy that lists the valid names.
func ByName(name string) (Strategy, error) {
	switch name {
	case StickyName, "":
		return Sticky{}, nil
	case RangeName:
		return Range{}, nil
	case RoundRobinName:
		return RoundRobin{}, nil
	}
	return nil, fmt.Errorf("%w %q (want one of %s)", ErrUnknownStrategy, name, strings.Join(Names(), ", "))
}
