package coordinator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// multiHook calls before ahead of each multi.
type multiHook struct {
	zkConn
	before func()
}

func (m *multiHook) Multi(ops ...any) ([]zk.MultiResponse, error) {
	m.before()
	return m.zkConn.Multi(ops...)
}

// CreateQueues packs many buckets' writes into one multi: 2,000 new queues
// touch most of the 1,024 buckets, and a multi per bucket cost ZooKeeper a
// transaction each (the family registrar registers a second of new queues
// at a time).
func TestCreateQueuesPacksManyBucketsToAMulti(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	var multis atomic.Int64
	s := connectWrapped(t, server.Addrs, root, testTimeout, func(conn zkConn, cfg Config) zkConn {
		return &multiHook{zkConn: conn, before: func() { multis.Add(1) }}
	})
	ctx := ctxT(t)
	cfgs := make([]drover.QueueConfig, 2000)
	for i := range cfgs {
		cfgs[i] = drover.QueueConfig{Name: fmt.Sprintf("packed-%05d", i), Concurrency: 1}
	}
	buckets := map[string]bool{}
	for _, c := range cfgs {
		buckets[registryBucket(c.Name)] = true
	}
	n, err := s.Queues().CreateMany(ctx, cfgs)
	if err != nil || n != len(cfgs) {
		t.Fatalf("create: want %d created, have %d (%v)", len(cfgs), n, err)
	}
	if m := multis.Load(); m > 10 {
		t.Fatalf("%d queues in %d buckets: want at most 10 multis, have %d", len(cfgs), len(buckets), m)
	}
	names, err := s.Queues().Names(ctx)
	if err != nil || len(names) != len(cfgs) {
		t.Fatalf("registry: want %d queues, have %d (%v)", len(cfgs), len(names), err)
	}
}

// A bucket another writer changes between CreateQueues' read and its
// packed multi fails that multi whole; every bucket of it is then written
// on its own, and nothing is lost or counted twice.
func TestCreateQueuesPackedMultiLosingARaceFallsBackPerBucket(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	admin := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	cfgs := make([]drover.QueueConfig, 300)
	for i := range cfgs {
		cfgs[i] = drover.QueueConfig{Name: fmt.Sprintf("race-%04d", i)}
	}
	var once sync.Once
	raced := make(chan error, 1)
	s := connectWrapped(t, server.Addrs, root, testTimeout, func(conn zkConn, cfg Config) zkConn {
		return &multiHook{zkConn: conn, before: func() {
			once.Do(func() {
				// Another writer adds a queue to the first queue's bucket.
				other := fmt.Sprintf("other-%s", cfgs[0].Name)
				for i := 0; registryBucket(other) != registryBucket(cfgs[0].Name); i++ {
					other = fmt.Sprintf("other-%d", i)
				}
				raced <- admin.Queues().Create(context.Background(), drover.QueueConfig{Name: other})
			})
		}}
	})
	n, err := s.Queues().CreateMany(ctx, cfgs)
	if err := <-raced; err != nil {
		t.Fatal(err)
	}
	if err != nil || n != len(cfgs) {
		t.Fatalf("create: want %d created, have %d (%v)", len(cfgs), n, err)
	}
	names, err := admin.Queues().Names(ctx)
	if err != nil || len(names) != len(cfgs)+1 {
		t.Fatalf("registry: want %d queues, have %d (%v)", len(cfgs)+1, len(names), err)
	}
	// Again: every queue is configured already.
	if n, err := s.Queues().CreateMany(ctx, cfgs); err != nil || n != 0 {
		t.Fatalf("create again: want 0 created, have %d (%v)", n, err)
	}
}

// A session's next CreateQueues reads only the buckets it did not write
// last (the registrar's every second); a bucket another writer changed
// since fails its multi on the version and is read and written again.
func TestCreateQueuesReusesTheBucketsItWrote(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	admin := connect(t, server.Addrs, root)
	var gets atomic.Int64
	dir := admin.path(queuesDir) + "/"
	s := connectWrapped(t, server.Addrs, root, testTimeout, func(conn zkConn, cfg Config) zkConn {
		bucket := func(p string) bool { // a bucket node, not a config below it
			rest, ok := strings.CutPrefix(p, dir)
			return ok && !strings.Contains(rest, "/")
		}
		return &getCounter{zkConn: conn, match: bucket, gets: &gets}
	})
	ctx := ctxT(t)
	batch := func(prefix string, n int) []drover.QueueConfig {
		cfgs := make([]drover.QueueConfig, n)
		for i := range cfgs {
			cfgs[i] = drover.QueueConfig{Name: fmt.Sprintf("%s-%04d", prefix, i)}
		}
		return cfgs
	}
	first := batch("first", 400)
	if n, err := s.Queues().CreateMany(ctx, first); err != nil || n != len(first) {
		t.Fatalf("first batch: want %d created, have %d (%v)", len(first), n, err)
	}
	// Names of the second batch in buckets the first one wrote.
	written := map[string]bool{}
	for _, c := range first {
		written[registryBucket(c.Name)] = true
	}
	var second []drover.QueueConfig
	for i := 0; len(second) < 100; i++ {
		if c := (drover.QueueConfig{Name: fmt.Sprintf("second-%05d", i)}); written[registryBucket(c.Name)] {
			second = append(second, c)
		}
	}
	// Another writer changes the bucket of the second batch's first queue.
	other := drover.QueueConfig{Name: "other"}
	for i := 0; registryBucket(other.Name) != registryBucket(second[0].Name); i++ {
		other.Name = fmt.Sprintf("other-%d", i)
	}
	if err := admin.Queues().Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	gets.Store(0)
	if n, err := s.Queues().CreateMany(ctx, second); err != nil || n != len(second) {
		t.Fatalf("second batch: want %d created, have %d (%v)", len(second), n, err)
	}
	buckets := map[string]bool{}
	for _, c := range second {
		buckets[registryBucket(c.Name)] = true
	}
	// The stale bucket fails the multi and is read and written on its own
	// (a read, and one more if its write loses another race); the other
	// buckets are sent again as this session wrote them.
	if g := gets.Load(); g > 2 {
		t.Fatalf("second batch in %d buckets this session wrote, one changed since: want at most 2 bucket reads, have %d", len(buckets), g)
	}
	names, err := admin.Queues().Names(ctx)
	if want := len(first) + len(second) + 1; err != nil || len(names) != want {
		t.Fatalf("registry: want %d queues, have %d (%v)", want, len(names), err)
	}
	// A third batch into the same buckets, nobody else writing: no read.
	third := make([]drover.QueueConfig, len(second))
	for i, c := range second {
		third[i] = drover.QueueConfig{Name: c.Name + "-3"}
	}
	for i := range third {
		for j := 0; registryBucket(third[i].Name) != registryBucket(second[i].Name); j++ {
			third[i].Name = fmt.Sprintf("%s-3-%d", second[i].Name, j)
		}
	}
	gets.Store(0)
	if n, err := s.Queues().CreateMany(ctx, third); err != nil || n != len(third) {
		t.Fatalf("third batch: want %d created, have %d (%v)", len(third), n, err)
	}
	// Only the bucket written on its own is read (the bucket-by-bucket
	// pass does not keep what it wrote).
	if g := gets.Load(); g > 1 {
		t.Fatalf("third batch into buckets this session wrote last: want at most 1 bucket read, have %d", g)
	}
}

// A queue this session registered and another writer then deleted (a
// retired family queue, say) is registered again by the next CreateMany:
// the session's copy of the bucket still lists it, and is not trusted for
// that.
func TestCreateQueuesDoesNotTrustItsCopyForAQueueDeletedSince(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	cfgs := []drover.QueueConfig{{Name: "kept"}, {Name: "again"}}
	if n, err := s.Queues().CreateMany(ctx, cfgs); err != nil || n != 2 {
		t.Fatalf("create: want 2 created, have %d (%v)", n, err)
	}
	if err := admin.Queues().Delete(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Queues().CreateMany(ctx, cfgs[1:]); err != nil || n != 1 {
		t.Fatalf("create a deleted queue again: want 1 created, have %d (%v)", n, err)
	}
	if _, err := admin.Queues().Get(ctx, "again"); err != nil {
		t.Fatalf("the queue created again: %v", err)
	}
}
