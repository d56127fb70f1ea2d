package coordinator

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

func sameMap(a, b map[string]drover.TaskRoute) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Queues configured with equal task routes share one decoded Tasks map in
// what ConfigWatch delivers, so a member keeping 25,000
// watched configs holds one table, not 25,000; different routes stay apart
// and Queues.Get (whose result the CLI edits) keeps its own copy.
func TestWatchedConfigsShareEqualTaskRoutes(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	routes := func(cmd string) map[string]drover.TaskRoute {
		return map[string]drover.TaskRoute{"send": {Command: []string{cmd, "--x"}}, "noop": {Inline: true}}
	}
	cfgs := map[string]map[string]drover.TaskRoute{"a": routes("mail"), "b": routes("mail"), "c": routes("sms")}
	for q, r := range cfgs {
		if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: q, Tasks: r}); err != nil {
			t.Fatal(err)
		}
	}
	w := s.Queues().WatchConfigs(ctx)
	read := map[string]map[string]drover.TaskRoute{}
	for q, want := range cfgs {
		e, err := w.Read(ctx, q)
		if err != nil || e.Err != nil {
			t.Fatalf("read %s: %+v (%v)", q, e, err)
		}
		if !reflect.DeepEqual(e.Config.Tasks, want) {
			t.Fatalf("read %s: want routes %v, have %v", q, want, e.Config.Tasks)
		}
		read[q] = e.Config.Tasks
	}
	if !sameMap(read["a"], read["b"]) {
		t.Fatal("a and b route the same tasks the same way but hold two maps")
	}
	if sameMap(read["a"], read["c"]) {
		t.Fatal("a and c route differently but share a map")
	}
	// A second Read of a followed queue is shared too.
	again, err := w.Read(ctx, "b")
	if err != nil || !sameMap(again.Config.Tasks, read["a"]) {
		t.Fatalf("re-read of b: want the shared map, have %v (%v)", again.Config.Tasks, err)
	}

	own, err := s.Queues().Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if sameMap(own.Config.Tasks, read["a"]) {
		t.Fatal("Queues.Get returned the shared map; a caller editing it would change every watched queue")
	}
}

// The interner keeps at most maxInternedRoutes tables; past that, new
// tables are returned unshared (correct, only bigger), and known ones are
// still shared.
func TestRouteInternerIsBounded(t *testing.T) {
	var r routeInterner
	table := func(i int) map[string]drover.TaskRoute {
		return map[string]drover.TaskRoute{fmt.Sprintf("t%d", i): {Inline: true}}
	}
	first := table(0)
	if got := r.intern(first); !sameMap(got, first) {
		t.Fatal("the first table is not kept as the shared one")
	}
	for i := 1; i < maxInternedRoutes+10; i++ {
		r.intern(table(i))
	}
	if len(r.tables) != maxInternedRoutes {
		t.Fatalf("want %d tables kept, have %d", maxInternedRoutes, len(r.tables))
	}
	extra := table(maxInternedRoutes + 100)
	if got := r.intern(extra); !sameMap(got, extra) || !reflect.DeepEqual(got, extra) {
		t.Fatal("a table past the bound should come back as it is")
	}
	if got := r.intern(table(0)); !sameMap(got, first) {
		t.Fatal("a known table is no longer shared after the bound was reached")
	}
	if got := r.intern(nil); got != nil {
		t.Fatal("nil routes should stay nil")
	}
}
