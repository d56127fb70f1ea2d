package testkit

import "strings"

// SessionSuspended and SessionLost read one line of a `drover worker` log
// (hclog's text format: the message, a colon, its fields): whether it
// reports the worker's ZooKeeper session suspended, or lost for any reason
// but the worker closing it itself ("the session was closed": a stop, not
// a loss; coordinator's closedReason). The chaos run and the fleet bench
// count a worker's session events by these, so that both count alike.
func SessionSuspended(line string) bool {
	return strings.Contains(line, "zookeeper session suspended")
}

// SessionLost: see SessionSuspended.
func SessionLost(line string) bool {
	return strings.Contains(line, "zookeeper session lost:") && !strings.Contains(line, "the session was closed")
}
