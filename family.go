package drover

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrFamilyNotFound: the named queue family does not exist. It wraps
// ErrNotFound, so callers that map "not found" (exit code 3, HTTP 404)
// need nothing more.
var ErrFamilyNotFound = fmt.Errorf("queue family: %w", ErrNotFound)

// MaxFamilies bounds the families of one cluster: the rebalance leader
// matches every new queue name against all of them.
const MaxFamilies = 1000

// DefaultFamilyMaxQueues is a family's MaxQueues when it sets none: the
// number of queues the fleet's cost model is met at (DESIGN.md §10), so
// that producers cannot take one family past what the fleet is built for
// unless an operator says so (docs/decisions.md, "Issue 41: a family's
// bound on its queues").
const DefaultFamilyMaxQueues = 100_000

// ErrFamilyFull: an enqueue would have brought a new queue into a family
// that holds its MaxQueues already; nothing was written. A
// *FamilyFullError carries the family and its bound.
var ErrFamilyFull = errors.New("drover: queue family full")

// FamilyFullError is the error of an enqueue refused by a family's
// MaxQueues: the queue is not registered and the family may not hold
// another. Nothing was written. It wraps ErrFamilyFull.
type FamilyFullError struct {
	Queue     string
	Family    string
	MaxQueues int
}

func (e *FamilyFullError) Error() string {
	return fmt.Sprintf("queue %s: family %s holds its max_queues (%d queues) already: retire a queue of it or raise max_queues", e.Queue, e.Family, e.MaxQueues)
}

// Unwrap returns ErrFamilyFull.
func (e *FamilyFullError) Unwrap() error { return ErrFamilyFull }

// FamilyConfig is a queue family: a queue configuration that applies to
// every queue whose name starts with Prefix, so that such a queue runs from
// its first enqueue with no per-queue command (docs/one-queue-per-key.md).
// Stored in /families/<name>. A queue configured on its own (drover ctl
// queue create) keeps its own configuration: the family applies only to
// queues nobody configured.
type FamilyConfig struct {
	// Name names the family (the rules of a queue name).
	Name string `json:"name"`
	// Prefix selects the family's queues: every queue whose name starts
	// with it. When several families match a queue, the longest prefix
	// wins. It must not be empty.
	Prefix string `json:"prefix"`
	// Queue is the configuration every queue of the family gets; its Name
	// and Family are set per queue.
	Queue QueueConfig `json:"queue"`
	// RetireAfter, when set, removes a queue of the family from the
	// registry once it has been empty (no pending, delayed or dead
	// message) and idle (no enqueue) for this long. Its next enqueue
	// registers it again. 0: never.
	RetireAfter Duration `json:"retire_after,omitempty"`
	// MaxQueues bounds the queues HTTP producers (POST
	// /api/v1/queues/{queue}/jobs) may bring into existence in the family:
	// a first enqueue to a key the family does not hold yet is refused
	// (HTTP 409 naming the bound, nothing written) while it holds MaxQueues
	// of them; retiring one frees room. Keys enqueued to by library
	// producers (Go, Python, Node: they hold Redis credentials and could
	// write any key) are not counted. 0: DefaultFamilyMaxQueues.
	MaxQueues int `json:"max_queues,omitempty"`
}

// QueueBound is the family's MaxQueues with its default applied.
func (f FamilyConfig) QueueBound() int {
	if f.MaxQueues > 0 {
		return f.MaxQueues
	}
	return DefaultFamilyMaxQueues
}

// QueueFor returns the configuration of queue, a queue of the family.
func (f FamilyConfig) QueueFor(queue string) QueueConfig {
	c := f.Queue
	c.Name, c.Family = queue, f.Name
	return c
}

// Matches reports whether queue belongs to the family's prefix.
func (f FamilyConfig) Matches(queue string) bool { return strings.HasPrefix(queue, f.Prefix) }

// Validate checks the family; the error names the field.
func (f FamilyConfig) Validate() error {
	if err := ValidateQueueName(f.Name); err != nil {
		return fmt.Errorf("%w: family name: %w", ErrInvalidConfig, err)
	}
	if f.Prefix == "" {
		return fmt.Errorf("%w: family %s: prefix: must not be empty (a family of every queue would configure queues nobody meant to run)", ErrInvalidConfig, f.Name)
	}
	if err := ValidateQueueName(f.Prefix); err != nil {
		return fmt.Errorf("%w: family %s: prefix: %w", ErrInvalidConfig, f.Name, err)
	}
	if f.RetireAfter < 0 {
		return fmt.Errorf("%w: family %s: retire_after: must be ≥ 0, have %s", ErrInvalidConfig, f.Name, f.RetireAfter.Std())
	}
	if f.MaxQueues < 0 {
		return fmt.Errorf("%w: family %s: max_queues: must be ≥ 0 (0: the default, %d), have %d", ErrInvalidConfig, f.Name, DefaultFamilyMaxQueues, f.MaxQueues)
	}
	if f.Queue.Family != "" && f.Queue.Family != f.Name {
		return fmt.Errorf("%w: family %s: queue.family: names family %q", ErrInvalidConfig, f.Name, f.Queue.Family)
	}
	// The template is checked as a queue of the family would be.
	if err := f.QueueFor(f.Prefix).Validate(); err != nil {
		return fmt.Errorf("family %s: queue: %w", f.Name, err)
	}
	return nil
}

// Families is a set of families, matched by prefix.
type Families []FamilyConfig

// Match returns the family of queue: the one with the longest prefix that
// queue starts with (of equal prefixes, the first by name), and false when
// none matches.
func (fs Families) Match(queue string) (FamilyConfig, bool) {
	best := -1
	for i, f := range fs {
		if !f.Matches(queue) {
			continue
		}
		if best < 0 || len(f.Prefix) > len(fs[best].Prefix) ||
			(len(f.Prefix) == len(fs[best].Prefix) && f.Name < fs[best].Name) {
			best = i
		}
	}
	if best < 0 {
		return FamilyConfig{}, false
	}
	return fs[best], true
}

// Get returns the family called name.
func (fs Families) Get(name string) (FamilyConfig, bool) {
	i := slices.IndexFunc(fs, func(f FamilyConfig) bool { return f.Name == name })
	if i < 0 {
		return FamilyConfig{}, false
	}
	return fs[i], true
}
