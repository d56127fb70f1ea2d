package coordinator

import (
	"fmt"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// Lookup finds every queue of a watched registry (sorted buckets) and of
// NewRegistry's, with its weight, and nothing else.
func TestRegistryLookup(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	admin := connect(t, server.Addrs, root, patient)
	const n = 300
	createQueues(t, admin, n)
	ctx := ctxLong(t)
	if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: "heavy", Weight: 7}); err != nil {
		t.Fatal(err)
	}
	reg := untilCtx(ctx, t, admin.Queues().WatchRegistry(ctx), "every queue", func(r Registry) bool { return r.Len() == n+1 })
	for q := range reg.All() {
		got, ok := reg.Lookup(q.Name)
		if !ok || got.Name != q.Name || got.Weight != q.Weight {
			t.Fatalf("Lookup(%s): want %+v, have %+v (%v)", q.Name, q, got, ok)
		}
	}
	if got, ok := reg.Lookup("heavy"); !ok || got.Weight != 7 {
		t.Fatalf("Lookup(heavy): want weight 7, have %+v (%v)", got, ok)
	}
	for _, q := range []string{"absent", "q", "heavy2", fmt.Sprintf("q%07d", n+5)} {
		if got, ok := reg.Lookup(q); ok {
			t.Fatalf("Lookup(%s): want nothing, have %+v", q, got)
		}
	}
	small := NewRegistry(RegisteredQueue{Name: "b", Weight: 2}, RegisteredQueue{Name: "a"})
	if got, ok := small.Lookup("b"); !ok || got.Weight != 2 {
		t.Fatalf("NewRegistry Lookup(b): want weight 2, have %+v (%v)", got, ok)
	}
	if _, ok := small.Lookup("c"); ok {
		t.Fatal("NewRegistry Lookup(c): found a queue it does not hold")
	}
}
