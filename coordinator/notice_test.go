package coordinator

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// A bucket's config notice moves with every write a queue's owner must hear
// of (create by an operator, update, delete, retire, a family's change) and
// not with the registration of new queues (CreateMany), so that a family's
// thousand new queues a second wake no member (ConfigWatch watches the
// notices). The bucket itself moves with all of them: the rebalance leader
// watches it.
func TestConfigNoticeMovesWithChangesNotWithRegistrations(t *testing.T) {
	t.Parallel()
	s := connect(t, testenv.ZooKeeper(t).Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	names := oneBucketQueues(8)
	bp := s.path(queuesDir, registryBucket(names[0]))
	np := s.path(noticesDir, registryBucket(names[0]))
	versions := func() (bucket, notice int32) {
		t.Helper()
		b, err := getNode(ctx, s, bp)
		if err != nil {
			t.Fatalf("read the bucket: %v", err)
		}
		n, err := getNode(ctx, s, np)
		if err != nil {
			t.Fatalf("read the notice: %v", err)
		}
		return b.stat.Version, n.stat.Version
	}
	if err := s.Queues().Create(ctx, drover.QueueConfig{Name: names[0]}); err != nil {
		t.Fatal(err)
	}
	b0, n0 := versions()

	f := drover.FamilyConfig{Name: "fam", Prefix: "q", Queue: drover.QueueConfig{Concurrency: 1}}
	if err := s.Families().Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	registerFamilyQueues(t, s, f, names[1:]...)
	b1, n1 := versions()
	if b1 == b0 || n1 != n0 {
		t.Fatalf("a registration: want the bucket moved and the notice not, have bucket %d -> %d, notice %d -> %d", b0, b1, n0, n1)
	}

	steps := []struct {
		what string
		do   func() error
	}{
		{"an update", func() error {
			_, err := s.Queues().Update(ctx, drover.QueueConfig{Name: names[1], Family: "fam", Concurrency: 2}, -1)
			return err
		}},
		{"a delete", func() error { return s.Queues().Delete(ctx, names[2]) }},
		{"a retire", func() error {
			ok, err := s.Queues().Retire(ctx, names[3], "fam", func(context.Context) (bool, error) { return true, nil })
			if err == nil && !ok {
				t.Fatalf("retire %s: not retired", names[3])
			}
			return err
		}},
		{"an operator's create", func() error { return s.Queues().Create(ctx, drover.QueueConfig{Name: names[2]}) }},
		{"a family's change", func() error {
			next := f
			next.Queue.Concurrency = 3
			_, err := s.Families().Change(ctx, next, -1)
			return err
		}},
	}
	for _, st := range steps {
		_, before := versions()
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		if _, after := versions(); after == before {
			t.Fatalf("%s: want the notice moved, have it at version %d still", st.what, after)
		}
	}
}

// A followed queue whose config is missing is delivered when a
// registration creates it, though a registration moves no notice: the
// watch reads missing configs again (missingPoll).
func TestConfigWatchDeliversAQueueARegistrationCreates(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	w := s.Queues().WatchConfigs(ctx)
	e, err := w.Read(ctx, "fam-1")
	if err != nil || e.Err == nil {
		t.Fatalf("read a queue not registered: want an entry with ErrQueueNotFound, have %+v (%v)", e, err)
	}
	f := drover.FamilyConfig{Name: "fam", Prefix: "fam-", Queue: drover.QueueConfig{Concurrency: 7}}
	if err := admin.Families().Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	registerFamilyQueues(t, admin, f, "fam-1")
	got := untilCtx(ctx, t, w.Changes(), "the registration of fam-1", func(QueueEntry) bool { return true })
	if got.Name != "fam-1" || got.Err != nil || got.Config.Concurrency != 7 {
		t.Fatalf("want fam-1 at concurrency 7, have %+v", got)
	}
}

// Arming the watch of a notice not created yet (a bucket no config write
// has changed: every queue of a family's is registered by CreateMany) is
// one request, as for one that exists.
func TestConfigWatchArmsAMissingNoticeInOneRequest(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	admin := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	x, y := sameBucketQueues(t)
	if n, err := admin.Queues().CreateMany(ctx, []drover.QueueConfig{{Name: x}, {Name: y}}); err != nil || n != 2 {
		t.Fatalf("CreateMany: %d, %v", n, err)
	}
	notice := admin.path(noticesDir, registryBucket(x))
	var requests atomic.Int32
	s := connectHooked(t, server.Addrs, root, func(p string) {
		if p == notice {
			requests.Add(1)
		}
	})
	w := s.Queues().WatchConfigs(ctx)
	for _, q := range []string{x, y} {
		if _, err := w.Read(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("two queues of a bucket without a notice: want one request arming its watch, have %d", n)
	}
	if _, err := admin.Queues().Update(ctx, drover.QueueConfig{Name: x, Concurrency: 4}, -1); err != nil {
		t.Fatal(err)
	}
	got := untilCtx(ctx, t, w.Changes(), "the change of "+x, func(QueueEntry) bool { return true })
	if got.Name != x || got.Config.Concurrency != 4 {
		t.Fatalf("want %s at concurrency 4 (the notice's creation fired the watch), have %+v", x, got)
	}
}

// A config write whose notice cannot be set fails with the server's error;
// only a missing notice is created and the write sent again.
func TestAWriteWhoseNoticeIsRefusedFails(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s := connect(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	if err := s.Queues().Create(ctx, drover.QueueConfig{Name: "q"}); err != nil {
		t.Fatal(err)
	}
	raw, _, err := zk.Connect(server.Addrs, testTimeout, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.SetACL(s.path(noticesDir, registryBucket("q")), zk.WorldACL(zk.PermRead), -1); err != nil {
		t.Fatal(err)
	}
	_, err = s.Queues().Update(ctx, drover.QueueConfig{Name: "q", Concurrency: 2}, -1)
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("update with a read-only notice: want zk.ErrNoAuth, have %v", err)
	}
}

// failingMulti fails the next multi as a whole (a lost connection: no
// operation's result), then passes the others.
type failingMulti struct {
	zkConn
	fail atomic.Bool
}

func (f *failingMulti) Multi(ops ...any) ([]zk.MultiResponse, error) {
	if f.fail.CompareAndSwap(true, false) {
		return nil, zk.ErrConnectionClosed
	}
	return f.zkConn.Multi(ops...)
}

// A registry write that does not move a notice and fails as a whole (no
// operation's result) returns the failure: with no notice in the multi,
// "the notice's operation failed" must not be read from an absent result
// (it was: an index out of range).
func TestARegistryWriteThatFailsWholeReturnsTheFailure(t *testing.T) {
	t.Parallel()
	var fm *failingMulti
	s := connectWrapped(t, testenv.ZooKeeper(t).Addrs, testenv.Chroot(t), testTimeout, func(conn zkConn, cfg Config) zkConn {
		fm = &failingMulti{zkConn: conn}
		return fm
	})
	ctx := ctxT(t)
	p := s.path(queuesDir, registryBucket("q"))
	fm.fail.Store(true)
	_, err := s.updateBucket(ctx, p, func(b *bucketData) ([]any, error) {
		b.put(drover.QueueConfig{Name: "q"})
		return []any{}, nil
	})
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("want the multi's failure (connection closed), have %v", err)
	}
}
