package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// configWatchSetup connects a member's session and an admin's to a fresh
// root and creates queues a and b from cfg.
func configWatchSetup(t *testing.T, cfg drover.QueueConfig) (s, admin *Session, ctx context.Context) {
	t.Helper()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin = connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx = ctxT(t)
	for _, q := range []string{"a", "b"} {
		cfg.Name = q
		if err := admin.Queues().Create(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	return s, admin, ctx
}

// A member reads an owned queue's config once (Read arms the watch) and then
// hears of changes only; a forgotten queue's changes are not delivered, and a
// queue configured after it was read as missing is delivered when created.
func TestConfigWatchReadsOnceAndFollowsChanges(t *testing.T) {
	t.Parallel()
	s, admin, ctx := configWatchSetup(t, drover.QueueConfig{Weight: 1})
	w := s.Queues().WatchConfigs(ctx)
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

	if _, err := admin.Queues().Update(ctx, drover.QueueConfig{Name: "a", Weight: 2}, -1); err != nil {
		t.Fatal(err)
	}
	got := untilCtx(ctx, t, w.Changes(), "the change of a", func(e QueueEntry) bool { return true })
	if got.Name != "a" || got.Config.Weight != 2 {
		t.Fatalf("want a at weight 2, have %s at %d", got.Name, got.Config.Weight)
	}

	w.Forget("a")
	if _, err := admin.Queues().Update(ctx, drover.QueueConfig{Name: "a", Weight: 3}, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Queues().Update(ctx, drover.QueueConfig{Name: "b", Weight: 3}, -1); err != nil {
		t.Fatal(err)
	}
	// Events of one session arrive in order: a's change would come first.
	got = untilCtx(ctx, t, w.Changes(), "the change of b", func(e QueueEntry) bool { return true })
	if got.Name != "b" || got.Config.Weight != 3 {
		t.Fatalf("want b at weight 3 (a is forgotten), have %s at %d", got.Name, got.Config.Weight)
	}

	if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: "later", Weight: 5}); err != nil {
		t.Fatal(err)
	}
	got = untilCtx(ctx, t, w.Changes(), "the creation of later", func(e QueueEntry) bool { return true })
	if got.Name != "later" || got.Err != nil || got.Config.Weight != 5 {
		t.Fatalf("want later at weight 5, have %+v", got)
	}
}

// A change that leaves the queue's weight and tags alone (concurrency, task
// routes) reaches the owner too: every config write sets its registry
// bucket, whose data watch the owner holds. The rebalance leader, which
// watches the same buckets, is not handed a new registry for it.
func TestConfigWatchDeliversAChangeTheLeaderDoesNotBalanceBy(t *testing.T) {
	t.Parallel()
	s, admin, ctx := configWatchSetup(t, drover.QueueConfig{Concurrency: 1})
	reg := s.Queues().WatchRegistry(ctx)
	untilCtx(ctx, t, reg, "the first registry", func(r Registry) bool { return r.Len() == 2 })
	w := s.Queues().WatchConfigs(ctx)
	if e, err := w.Read(ctx, "a"); err != nil || e.Err != nil || e.Config.Concurrency != 1 {
		t.Fatalf("read a: want concurrency 1, have %+v (%v)", e, err)
	}
	if _, err := admin.Queues().Update(ctx, drover.QueueConfig{Name: "a", Concurrency: 4}, -1); err != nil {
		t.Fatal(err)
	}
	got := untilCtx(ctx, t, w.Changes(), "the concurrency change of a", func(e QueueEntry) bool { return true })
	if got.Name != "a" || got.Config.Concurrency != 4 {
		t.Fatalf("want a at concurrency 4, have %s at %d", got.Name, got.Config.Concurrency)
	}
	// The next registry the leader gets is the weight change of b, not a
	// copy of the last one for a's concurrency.
	if _, err := admin.Queues().Update(ctx, drover.QueueConfig{Name: "b", Concurrency: 1, Weight: 9}, -1); err != nil {
		t.Fatal(err)
	}
	r := untilCtx(ctx, t, reg, "the next registry", func(Registry) bool { return true })
	for q := range r.All() {
		if q.Name == "b" && q.Weight != 9 {
			t.Fatalf("the leader was handed a registry without a change it balances by: b at weight %d", q.Weight)
		}
	}
}

// A change made while a bucket's watch is down — after it fired, before it
// is armed again — is not lost: once the watch is armed again, every
// followed queue of the bucket is read. Here y changes just before the
// watch that x's change fired is armed again.
func TestConfigWatchReadsAChangeMadeWhileItsWatchWasDown(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	x, y := sameBucketQueues(t)
	admin := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	for _, q := range []string{x, y} {
		if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: q, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	}
	bucket := admin.path(noticesDir, registryBucket(x))
	var arms atomic.Int32
	s := connectHooked(t, server.Addrs, root, func(p string) {
		if p != bucket || arms.Add(1) != 2 {
			return
		}
		// The second arming: the first one's watch has fired (x's change).
		if _, err := admin.Queues().Update(context.Background(), drover.QueueConfig{Name: y, Concurrency: 3}, -1); err != nil {
			t.Error(err)
		}
	})
	w := s.Queues().WatchConfigs(ctx)
	for _, q := range []string{x, y} {
		if _, err := w.Read(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if arms.Load() != 1 {
		t.Fatalf("two queues of one bucket: want one watch armed, have %d", arms.Load())
	}
	if _, err := admin.Queues().Update(ctx, drover.QueueConfig{Name: x, Concurrency: 2}, -1); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{x: 2, y: 3}
	untilCtx(ctx, t, w.Changes(), "the changes of x and y", func(e QueueEntry) bool {
		if want[e.Name] == e.Config.Concurrency {
			delete(want, e.Name)
		}
		return len(want) == 0
	})
}

// sameBucketQueues returns two queue names of one registry bucket.
func sameBucketQueues(t *testing.T) (string, string) {
	t.Helper()
	first := map[string]string{}
	for i := 0; ; i++ {
		q := fmt.Sprintf("q%d", i)
		b := registryBucket(q)
		if other, ok := first[b]; ok {
			return other, q
		}
		first[b] = q
	}
}

// hookConn calls beforeWatch before each GetW and ExistsW.
type hookConn struct {
	zkConn
	beforeWatch func(path string)
}

func (h *hookConn) GetW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	h.beforeWatch(p)
	return h.zkConn.GetW(p)
}

func (h *hookConn) ExistsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	h.beforeWatch(p)
	return h.zkConn.ExistsW(p)
}

// connectHooked opens a session whose connection calls beforeWatch before
// each request that arms a watch.
func connectHooked(t *testing.T, servers []string, root string, beforeWatch func(path string)) *Session {
	return connectWrapped(t, servers, root, testTimeout, func(conn zkConn, cfg Config) zkConn {
		return &hookConn{zkConn: conn, beforeWatch: beforeWatch}
	})
}

// getCounter counts the plain reads of the nodes match accepts.
type getCounter struct {
	zkConn
	match func(path string) bool
	gets  *atomic.Int64
}

func (g *getCounter) Get(p string) ([]byte, *zk.Stat, error) {
	if g.match(p) {
		g.gets.Add(1)
	}
	return g.zkConn.Get(p)
}

// MultiRead counts each node read, as Get does.
func (g *getCounter) MultiRead(ops ...any) ([]zk.MultiReadResponse, error) {
	for _, p := range readOpPaths(ops) {
		if g.match(p) {
			g.gets.Add(1)
		}
	}
	return g.zkConn.MultiRead(ops...)
}

// When a bucket changes, its owner reads again only the followed configs
// the bucket says changed: new queues landing in the bucket (1,000 a second
// when a family's queues appear, touching most buckets) cost a member one
// read of the bucket, not one read per followed queue of it.
func TestConfigWatchReadsOnlyTheConfigsTheBucketSaysChanged(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	names := oneBucketQueues(26)
	followed, extra := names[:20], names[20:]
	admin := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	for _, q := range followed {
		if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: q, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var gets atomic.Int64
	prefix := admin.path(queuesDir, registryBucket(names[0])) + "/"
	s := connectWrapped(t, server.Addrs, root, testTimeout, func(conn zkConn, cfg Config) zkConn {
		return &getCounter{zkConn: conn, match: func(p string) bool { return strings.HasPrefix(p, prefix) }, gets: &gets}
	})
	w := s.Queues().WatchConfigs(ctx)
	for _, q := range followed {
		if _, err := w.Read(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	change := func(concurrency int, creates ...string) {
		t.Helper()
		for _, q := range creates {
			if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: q}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := admin.Queues().Update(ctx, drover.QueueConfig{Name: followed[0], Concurrency: concurrency}, -1); err != nil {
			t.Fatal(err)
		}
		untilCtx(ctx, t, w.Changes(), "the change of "+followed[0], func(e QueueEntry) bool {
			return e.Name == followed[0] && e.Config.Concurrency == concurrency
		})
	}
	// The first change after Read compares the followed queues with the
	// bucket (Read does not read the bucket).
	change(2, extra[0])
	gets.Store(0)
	change(3, extra[1:]...)
	// One read of the changed config, and perhaps one more left over from
	// the first change (its update's event may come after the delivery);
	// reading every followed config again would be 20 a bucket event.
	if n := gets.Load(); n > 2 {
		t.Fatalf("five new queues in the bucket and one followed config changed: want at most 2 config reads, have %d (of %d followed)", n, len(followed))
	}
}

// oneBucketQueues returns n queue names of one registry bucket.
func oneBucketQueues(n int) []string {
	by := map[string][]string{}
	for i := 0; ; i++ {
		q := fmt.Sprintf("q%d", i)
		b := registryBucket(q)
		by[b] = append(by[b], q)
		if len(by[b]) == n {
			return by[b]
		}
	}
}
