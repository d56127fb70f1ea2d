package coordinator

import (
	"slices"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// Diff names the queues added, removed and re-weighted between two
// snapshots of a registry watch, and nothing else.
func TestRegistryDiffBetweenWatchSnapshots(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s := connect(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	var cfgs []drover.QueueConfig
	for _, q := range []string{"a", "b", "c", "d"} {
		cfgs = append(cfgs, drover.QueueConfig{Name: q, Concurrency: 1})
	}
	if _, err := s.Queues().CreateMany(ctx, cfgs); err != nil {
		t.Fatal(err)
	}
	reg := s.Queues().WatchRegistry(ctx)
	before := untilCtx(ctx, t, reg, "the four queues", func(r Registry) bool { return r.Len() == 4 })
	if _, err := s.Queues().CreateMany(ctx, []drover.QueueConfig{{Name: "e", Concurrency: 1}, {Name: "f", Concurrency: 1, Weight: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Queues().Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Queues().Update(ctx, drover.QueueConfig{Name: "c", Concurrency: 1, Weight: 7}, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Queues().Update(ctx, drover.QueueConfig{Name: "d", Concurrency: 5}, -1); err != nil {
		t.Fatal(err) // not a change the registry lists
	}
	after := untilCtx(ctx, t, reg, "the changes", func(r Registry) bool {
		for q := range r.All() {
			if q.Name == "c" && q.Weight == 7 && r.Len() == 5 {
				return true
			}
		}
		return false
	})
	d := after.Diff(before)
	var added []string
	for _, q := range d.Added {
		added = append(added, q.Name)
		if q.Name == "f" && q.Weight != 3 {
			t.Errorf("added f with weight %d, want 3", q.Weight)
		}
	}
	slices.Sort(added)
	if !slices.Equal(added, []string{"e", "f"}) || !slices.Equal(d.Removed, []string{"b"}) || !slices.Equal(d.Changed, []string{"c"}) {
		t.Fatalf("diff: added %v removed %v changed %v; want [e f] [b] [c]", added, d.Removed, d.Changed)
	}
	if same := after.Diff(after); !same.Empty() {
		t.Fatalf("a snapshot against itself: %+v", same)
	}
	// Against a snapshot not from a watch: queue by queue.
	if d := after.Diff(NewRegistry(RegisteredQueue{Name: "a"}, RegisteredQueue{Name: "z"})); len(d.Added) != 4 || !slices.Equal(d.Removed, []string{"z"}) || len(d.Changed) != 0 {
		t.Fatalf("against NewRegistry(a, z): %+v", d)
	}
}
