package coordinator

import (
	"fmt"
	"strings"

	"github.com/drover-dev/drover"
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
	pauseDir, pauseQueuesDir, pauseMembersDir,
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
