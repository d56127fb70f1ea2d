package web

import (
	"strings"
	"testing"
)

// The 503 a request that needs ZooKeeper gets during an outage must not
// tell its caller that what it just asked for works (issue 41: an enqueue
// refused for want of ZooKeeper read "enqueues still work").
func TestZooKeeperDownDoesNotSayTheRefusedRequestWorks(t *testing.T) {
	msg := ErrZooKeeperDown.Error()
	if strings.Contains(msg, "enqueues still work") || !strings.Contains(msg, "this request needs it") {
		t.Fatalf("want a message that says this request needs ZooKeeper, have %q", msg)
	}
}
