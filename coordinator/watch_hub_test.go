package coordinator

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// The hub keeps the one set watching a path inline and any others in a
// map: an event reaches every set with a key on the path, and a path leaves
// the hub when its last key goes, whichever set added it first.
func TestWatchHubRoutesEventsToEverySetOnAPath(t *testing.T) {
	hub := newWatchHub()
	a, b, c := newWatchSet(hub), newWatchSet(hub), newWatchSet(hub)
	node, children := watchKey{watchNode, "/p"}, watchKey{watchChildren, "/p"}
	for _, ws := range []*watchSet{a, b} {
		ws.prepare(node)
		ws.armed(node)
	}
	a.prepare(children)
	a.armed(children)
	c.prepare(watchKey{watchNode, "/q"})
	c.armed(watchKey{watchNode, "/q"})
	if n := hub.paths(); n != 2 {
		t.Fatalf("want 2 paths routed, have %d", n)
	}
	hub.deliver(zk.Event{Type: zk.EventNodeDataChanged, Path: "/p"})
	for name, ws := range map[string]*watchSet{"a": a, "b": b} {
		if ws.isArmed(node) {
			t.Fatalf("%s: want its data watch on /p fired", name)
		}
		select {
		case <-ws.notify:
		default:
			t.Fatalf("%s: want a signal for the fired watch", name)
		}
	}
	if !a.isArmed(children) || !c.isArmed(watchKey{watchNode, "/q"}) {
		t.Fatal("a data event on /p: want a's children watch and c's watch on /q still armed")
	}
	// a still has its children key on /p; b has none left there.
	b.prepare(node) // b arms again while a's key remains: both sets on /p once more
	b.armed(node)
	a.forget(children)
	if n := hub.paths(); n != 2 {
		t.Fatalf("b still watches /p: want 2 paths routed, have %d", n)
	}
	hub.deliver(zk.Event{Type: zk.EventNodeDeleted, Path: "/p"})
	if b.isArmed(node) {
		t.Fatal("a deletion of /p: want b's data watch fired (b was kept beside the first set)")
	}
	c.close()
	if n := hub.paths(); n != 0 {
		t.Fatalf("every key gone: want no path routed, have %d", n)
	}
}
