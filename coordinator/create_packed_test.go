package coordinator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testenv"
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
	n, err := s.CreateQueues(ctx, cfgs)
	if err != nil || n != len(cfgs) {
		t.Fatalf("create: want %d created, have %d (%v)", len(cfgs), n, err)
	}
	if m := multis.Load(); m > 10 {
		t.Fatalf("%d queues in %d buckets: want at most 10 multis, have %d", len(cfgs), len(buckets), m)
	}
	names, err := s.QueueNames(ctx)
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
				raced <- admin.CreateQueue(context.Background(), drover.QueueConfig{Name: other})
			})
		}}
	})
	n, err := s.CreateQueues(ctx, cfgs)
	if err := <-raced; err != nil {
		t.Fatal(err)
	}
	if err != nil || n != len(cfgs) {
		t.Fatalf("create: want %d created, have %d (%v)", len(cfgs), n, err)
	}
	names, err := admin.QueueNames(ctx)
	if err != nil || len(names) != len(cfgs)+1 {
		t.Fatalf("registry: want %d queues, have %d (%v)", len(cfgs)+1, len(names), err)
	}
	// Again: every queue is configured already.
	if n, err := s.CreateQueues(ctx, cfgs); err != nil || n != 0 {
		t.Fatalf("create again: want 0 created, have %d (%v)", n, err)
	}
}
