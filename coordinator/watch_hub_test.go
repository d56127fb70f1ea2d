package coordinator

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// The hub keeps the first two sets watching a path inline and any others
// in a map: an event reaches every set with a key on the path, and a path
// leaves the hub when its last key goes, whichever set added it first.
func TestWatchHubRoutesEventsToEverySetOnAPath(t *testing.T) {
	hub := newWatchHub()
	a, b, c, d := newWatchSet(hub), newWatchSet(hub), newWatchSet(hub), newWatchSet(hub)
	node, children, other := watchKey{watchNode, "/p"}, watchKey{watchChildren, "/p"}, watchKey{watchNode, "/q"}
	for _, ws := range []*watchSet{a, b, d} { // d is the third set on /p
		ws.prepare(node)
		ws.armed(node)
	}
	a.prepare(children)
	a.armed(children)
	c.prepare(other)
	c.armed(other)
	if n := hub.paths(); n != 2 {
		t.Fatalf("want 2 paths routed, have %d", n)
	}
	hub.deliver(zk.Event{Type: zk.EventNodeDataChanged, Path: "/p"})
	for name, ws := range map[string]*watchSet{"a": a, "b": b, "d": d} {
		if ws.isArmed(node) {
			t.Fatalf("%s: want its data watch on /p fired", name)
		}
		select {
		case <-ws.notify:
		default:
			t.Fatalf("%s: want a signal for the fired watch", name)
		}
	}
	if !a.isArmed(children) || !c.isArmed(other) {
		t.Fatal("a data event on /p: want a's children watch and c's watch on /q still armed")
	}
	// a keeps its children key on /p; b and d arm again, then a leaves:
	// b and d stay routed although the set that came first is gone.
	for _, ws := range []*watchSet{b, d} {
		ws.prepare(node)
		ws.armed(node)
	}
	a.forget(children)
	if n := hub.paths(); n != 2 {
		t.Fatalf("b and d still watch /p: want 2 paths routed, have %d", n)
	}
	hub.deliver(zk.Event{Type: zk.EventNodeDeleted, Path: "/p"})
	if b.isArmed(node) || d.isArmed(node) {
		t.Fatal("a deletion of /p: want b's and d's data watches fired")
	}
	if n := hub.paths(); n != 1 {
		t.Fatalf("only c's watch on /q left: want 1 path routed, have %d", n)
	}
	c.close()
	if n := hub.paths(); n != 0 {
		t.Fatalf("every key gone: want no path routed, have %d", n)
	}
}
