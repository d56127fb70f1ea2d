package coordinator

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// notified reports (and consumes) whether ws was signalled.
func notified(ws *watchSet) bool {
	select {
	case <-ws.notify:
		return true
	default:
		return false
	}
}

// The hub routes a path's events to every set with keys on it, and keeps
// routing to a set until the last of its keys on the path is removed.
func TestWatchHubRoutesUntilTheLastKeyIsRemoved(t *testing.T) {
	h := newWatchHub()
	a, b := newWatchSet(h), newWatchSet(h)
	const p = "/q/x"
	node, children := watchKey{watchNode, p}, watchKey{watchChildren, p}
	// a watches p's data and children, b its data (prepare + armed).
	for _, arm := range []struct {
		ws *watchSet
		k  watchKey
	}{{a, node}, {a, children}, {b, node}} {
		arm.ws.prepare(arm.k)
		arm.ws.armed(arm.k)
	}

	h.deliver(zk.Event{Type: zk.EventNodeDataChanged, Path: p})
	if !notified(a) || !notified(b) {
		t.Fatal("a data change should reach both sets watching the path")
	}
	// The data watches fired and are gone; a's children watch is left.
	h.deliver(zk.Event{Type: zk.EventNodeDataChanged, Path: p})
	if notified(a) || notified(b) {
		t.Fatal("a second data change reached a set whose data watch had fired")
	}
	if n := h.paths(); n != 1 {
		t.Fatalf("a still watches p's children: want 1 routed path, have %d", n)
	}
	h.deliver(zk.Event{Type: zk.EventNodeChildrenChanged, Path: p})
	if !notified(a) || notified(b) {
		t.Fatal("a children change should reach a only")
	}
	if n := h.paths(); n != 0 {
		t.Fatalf("every watch fired: want no routed paths, have %d", n)
	}
	// forget of a key never armed leaves the hub alone; a new key routes again.
	b.forget(node)
	b.prepare(node)
	b.armed(node)
	h.deliver(zk.Event{Type: zk.EventNodeDeleted, Path: p})
	if !notified(b) || notified(a) {
		t.Fatal("the re-armed watch of b should hear the deletion, a nothing")
	}
}
