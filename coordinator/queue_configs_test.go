package coordinator

import (
	"errors"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testenv"
)

// A member reads an owned queue's config once (Read arms the watch) and then
// hears of changes only; a forgotten queue's changes are not delivered, and a
// queue configured after it was read as missing is delivered when created.
func TestConfigWatchReadsOnceAndFollowsChanges(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	for _, q := range []string{"a", "b"} {
		if err := admin.CreateQueue(ctx, drover.QueueConfig{Name: q, Weight: 1}); err != nil {
			t.Fatal(err)
		}
	}
	w := s.WatchQueueConfigs(ctx)
	for _, q := range []string{"a", "b"} {
		e, err := w.Read(ctx, q)
		if err != nil || e.Err != nil || e.Config.Weight != 1 {
			t.Fatalf("read %s: want weight 1, have %+v (%v)", q, e, err)
		}
	}
	e, err := w.Read(ctx, "later")
	if err != nil || !errors.Is(e.Err, drover.ErrQueueNotFound) {
		t.Fatalf("read a queue not configured: want an entry with ErrQueueNotFound, have %+v (%v)", e, err)
	}

	if _, err := admin.UpdateQueue(ctx, drover.QueueConfig{Name: "a", Weight: 2}, -1); err != nil {
		t.Fatal(err)
	}
	got := untilCtx(ctx, t, w.Changes(), "the change of a", func(e QueueEntry) bool { return true })
	if got.Name != "a" || got.Config.Weight != 2 {
		t.Fatalf("want a at weight 2, have %s at %d", got.Name, got.Config.Weight)
	}

	w.Forget("a")
	if _, err := admin.UpdateQueue(ctx, drover.QueueConfig{Name: "a", Weight: 3}, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UpdateQueue(ctx, drover.QueueConfig{Name: "b", Weight: 3}, -1); err != nil {
		t.Fatal(err)
	}
	// Events of one session arrive in order: a's change would come first.
	got = untilCtx(ctx, t, w.Changes(), "the change of b", func(e QueueEntry) bool { return true })
	if got.Name != "b" || got.Config.Weight != 3 {
		t.Fatalf("want b at weight 3 (a is forgotten), have %s at %d", got.Name, got.Config.Weight)
	}

	if err := admin.CreateQueue(ctx, drover.QueueConfig{Name: "later", Weight: 5}); err != nil {
		t.Fatal(err)
	}
	got = untilCtx(ctx, t, w.Changes(), "the creation of later", func(e QueueEntry) bool { return true })
	if got.Name != "later" || got.Err != nil || got.Config.Weight != 5 {
		t.Fatalf("want later at weight 5, have %+v", got)
	}
}
