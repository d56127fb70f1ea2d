package coordinator

import (
	"fmt"
	"strings"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/namehash"
)

// Paths below the root (docs/zookeeper-layout.md is the reference).
const (
	membersDir      = "members"
	memberPrefix    = "m-"
	electionDir     = "election"
	candidatePrefix = "n-"
	queuesDir       = "queues"
	ownersDir       = "owners"
	offsetsDir      = "offsets"
	coordDir        = "coord"
	epochNode       = "coord/epoch"
	assignmentNode  = "assignment"
	pauseDir        = "pause"
	pauseAllNode    = "pause/all"
	pauseQueuesDir  = "pause/queues"
	pauseMembersDir = "pause/members"
	familiesDir     = "families"
	noticesDir      = "notices"
)

// Election names.
const (
	ElectionRebalance = "rebalance"
	ElectionScheduler = "scheduler"
)

// persistentDirs are created by Connect when missing, in this order.
var persistentDirs = []string{
	membersDir, electionDir, electionDir + "/" + ElectionRebalance, electionDir + "/" + ElectionScheduler,
	queuesDir, ownersDir, offsetsDir, coordDir, epochNode, assignmentNode,
	pauseDir, pauseQueuesDir, pauseMembersDir, familiesDir, noticesDir,
}

// Size limits (DESIGN.md §10): no znode, multi request or response larger
// than maxRequestBytes, well under ZooKeeper's default jute.maxbuffer (1 MB),
// at any queue count.
const (
	// maxRequestBytes bounds every write this package sends (a multi's
	// payload: data plus paths). A write that would pass it fails with
	// ErrTooLarge instead of being sent: the server would close the
	// connection, and a client that re-sends after a lost reply would hang.
	maxRequestBytes = 512 << 10
	// batchBytes is what batched writes (assignment multis, coalesced
	// commits and claims, Queues.CreateMany) are cut at: under maxRequestBytes
	// by a margin for the estimate (requestSize counts the path, the data
	// and a fixed overhead per operation, not the frame's exact encoding).
	batchBytes = 448 << 10
	// registryBuckets is how many bucket nodes the queue registry spreads
	// its queues over: /queues/<bucket>/<queue>. A bucket's listing at
	// 1,000,000 queues is about 1,000 names (under 210 KB even at the
	// longest names), and so is its data (registry.go: maxBucketBytes).
	registryBuckets = 1024
)

// ErrTooLarge: a write or a listing would pass the size limit of one
// ZooKeeper request (maxRequestBytes).
var ErrTooLarge = fmt.Errorf("coordinator: request larger than %d bytes", maxRequestBytes)

// registryBucket returns the bucket node name of queue in the registry:
// three hex digits of its FNV-1a hash, modulo registryBuckets.
func registryBucket(queue string) string {
	return registryBucketNames[namehash.FNV32a(queue)%registryBuckets] // no allocation: Registry.Has runs it per event
}

// registryBucketNames holds every bucket's name, by number.
var registryBucketNames = func() (names [registryBuckets]string) {
	for i := range names {
		names[i] = fmt.Sprintf("%03x", i)
	}
	return names
}()

// queueConfigPath returns /queues/<bucket>/<queue> after validating the name.
func (s *Session) queueConfigPath(queue string) (string, error) {
	if err := drover.ValidateQueueName(queue); err != nil {
		return "", err
	}
	return s.path(queuesDir, registryBucket(queue), queue), nil
}

// queueNodePath is queueConfigPath for a name already validated.
func (s *Session) queueNodePath(queue string) string {
	return s.path(queuesDir, registryBucket(queue), queue)
}

// path joins the root and relative path elements.
func (s *Session) path(elems ...string) string {
	return s.cfg.Root + "/" + strings.Join(elems, "/")
}

// queuePath returns the path of queue under dir after validating the name.
func (s *Session) queuePath(dir, queue string) (string, error) {
	if err := drover.ValidateQueueName(queue); err != nil {
		return "", err
	}
	return s.path(dir, queue), nil
}

// pausePath returns the path of the pause flag for scope and name.
func (s *Session) pausePath(scope drover.PauseScope, name string) (string, error) {
	switch scope {
	case drover.PauseAll:
		if name != "" {
			return "", fmt.Errorf("%w: pause all takes no name, have %q", drover.ErrInvalidConfig, name)
		}
		return s.path(pauseAllNode), nil
	case drover.PauseQueue:
		return s.queuePath(pauseQueuesDir, name)
	case drover.PauseMember:
		if err := validateNodeName(name); err != nil {
			return "", fmt.Errorf("member name: %w", err)
		}
		return s.path(pauseMembersDir, name), nil
	}
	return "", fmt.Errorf("%w: unknown pause scope %q", drover.ErrInvalidConfig, scope)
}

// sequenceOf returns the sequence suffix of a sequential node's name (the
// last 10 characters, as ZooKeeper formats it), or "" when name has none.
func sequenceOf(name string) string {
	if len(name) < 10 {
		return ""
	}
	seq := name[len(name)-10:]
	for _, r := range seq {
		if r < '0' || r > '9' {
			return ""
		}
	}
	return seq
}
