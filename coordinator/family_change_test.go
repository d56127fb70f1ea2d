package coordinator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// registerFamilyQueues registers names as the family registrar does: with
// the family's configuration rendered for each.
func registerFamilyQueues(t *testing.T, s *Session, f drover.FamilyConfig, names ...string) {
	t.Helper()
	var cfgs []drover.QueueConfig
	for _, q := range names {
		cfgs = append(cfgs, f.QueueFor(q))
	}
	if n, err := s.Queues().CreateMany(ctxT(t), cfgs); err != nil || n != len(names) {
		t.Fatalf("CreateQueues: want %d created, have %d, %v", len(names), n, err)
	}
}

func mustQueue(t *testing.T, s *Session, q string) drover.QueueConfig {
	t.Helper()
	e, err := s.Queues().Get(ctxT(t), q)
	if err != nil {
		t.Fatal(err)
	}
	return e.Config
}

// A family's change reaches the queues it registered, live (the registry
// bucket carries a new weight); a queue an operator changed, a queue
// configured on its own under the prefix and a queue of another family
// are kept; ReapplyFamily brings a queue registered from the old
// configuration after the change up to date.
func TestChangeFamilyUpdatesItsQueues(t *testing.T) {
	t.Parallel()
	s := connect(t, testenv.ZooKeeper(t).Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	f := drover.FamilyConfig{Name: "cust", Prefix: "cust-", Queue: drover.QueueConfig{
		Concurrency: 2, RateLimit: drover.RateLimit{PerSecond: 5}, Tasks: map[string]drover.TaskRoute{"*": {Inline: true}}}}
	if err := s.Families().Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	eu := drover.FamilyConfig{Name: "eu", Prefix: "cust-eu-", Queue: drover.QueueConfig{Concurrency: 1}}
	if err := s.Families().Create(ctx, eu); err != nil {
		t.Fatal(err)
	}
	var mine []string
	for i := range 10 {
		mine = append(mine, fmt.Sprintf("cust-%d", i))
	}
	registerFamilyQueues(t, s, f, mine...)
	registerFamilyQueues(t, s, eu, "cust-eu-1")
	if err := s.Queues().Create(ctx, drover.QueueConfig{Name: "cust-own", Concurrency: 7}); err != nil {
		t.Fatal(err)
	}
	over := mustQueue(t, s, "cust-3")
	over.RateLimit.PerSecond = 50 // an operator's ctl queue update
	if _, err := s.Queues().Update(ctx, over, -1); err != nil {
		t.Fatal(err)
	}
	e, err := s.Families().Get(ctx, "cust")
	if err != nil {
		t.Fatal(err)
	}
	next := f
	next.Queue.RateLimit.PerSecond = 10
	next.Queue.Weight = 3
	c, err := s.Families().Change(ctx, next, e.Version)
	if err != nil {
		t.Fatal(err)
	}
	if c.Updated != 9 || c.Kept != 1 || c.Version != e.Version+1 {
		t.Fatalf("ChangeFamily: want 9 updated, 1 kept, version %d; have %+v", e.Version+1, c)
	}
	for _, q := range mine {
		got := mustQueue(t, s, q)
		want := 10.0
		if q == "cust-3" {
			want = 50
		}
		if got.RateLimit.PerSecond != want || got.Family != "cust" {
			t.Errorf("%s: want rate %g of family cust, have %+v", q, want, got)
		}
	}
	if got := mustQueue(t, s, "cust-own"); got.Concurrency != 7 || got.RateLimit.Enabled() {
		t.Errorf("cust-own, configured on its own: want it untouched, have %+v", got)
	}
	if got := mustQueue(t, s, "cust-eu-1"); got.Family != "eu" || got.RateLimit.Enabled() {
		t.Errorf("cust-eu-1, of the family eu: want it untouched, have %+v", got)
	}
	reg := registered(<-s.Queues().WatchRegistry(ctx))
	if reg["cust-0"].Weight != 3 || reg["cust-3"].Weight != 0 {
		t.Errorf("registry bucket: want cust-0 weight 3 (the family's), cust-3 weight 0 (its own); have %d, %d", reg["cust-0"].Weight, reg["cust-3"].Weight)
	}
	// Changing nothing of the queues' configuration writes none.
	again := next
	again.RetireAfter = drover.Duration(3600e9)
	if c, err := s.Families().Change(ctx, again, -1); err != nil || c.Updated != 0 || c.Kept != 1 {
		t.Fatalf("a change of retire_after only: want 0 updated (1 kept), have %+v, %v", c, err)
	}

	// The registrar registered cust-late from the configuration before the
	// change (its family watch had not caught up) after ChangeFamily passed.
	registerFamilyQueues(t, s, f, "cust-late")
	u, k, err := s.Families().Reapply(ctx, again, []drover.QueueConfig{f.QueueFor("cust-late"), f.QueueFor("cust-3")})
	if err != nil || u != 1 || k != 1 {
		t.Fatalf("ReapplyFamily: want 1 updated (cust-late), 1 kept (cust-3), have %d, %d, %v", u, k, err)
	}
	if got := mustQueue(t, s, "cust-late"); got.RateLimit.PerSecond != 10 {
		t.Errorf("cust-late after ReapplyFamily: want rate 10, have %+v", got)
	}
}

// updateBeforeMulti runs hook once, before the first multi that writes
// path: a concurrent writer that lands between a read and its write.
type updateBeforeMulti struct {
	zkConn
	path string
	once sync.Once
	hook func()
}

func (c *updateBeforeMulti) Multi(ops ...any) ([]zk.MultiResponse, error) {
	for _, op := range ops {
		if set, ok := op.(*zk.SetDataRequest); ok && set.Path == c.path {
			c.once.Do(c.hook)
		}
	}
	return c.zkConn.Multi(ops...)
}

// An operator's update of a queue that lands between ChangeFamily's read
// of the queue and its write is not overwritten: the multi fails on the
// queue's version, the bucket is judged again, and the queue is kept.
func TestChangeFamilyKeepsConcurrentQueueUpdate(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	operator := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	var hooked *updateBeforeMulti
	s := connectWrapped(t, server.Addrs, root, testTimeout, func(conn zkConn, cfg Config) zkConn {
		hooked = &updateBeforeMulti{zkConn: conn, path: cfg.Root + "/" + queuesDir + "/" + registryBucket("cust-5") + "/cust-5"}
		return hooked
	})
	ran := false
	hooked.hook = func() {
		ran = true
		cfg := mustQueue(t, operator, "cust-5")
		cfg.Concurrency = 1
		if _, err := operator.Queues().Update(context.Background(), cfg, -1); err != nil {
			t.Error(err)
		}
	}
	f := drover.FamilyConfig{Name: "cust", Prefix: "cust-", Queue: drover.QueueConfig{Concurrency: 2}}
	if err := s.Families().Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	registerFamilyQueues(t, s, f, "cust-1", "cust-5", "cust-9")
	next := f
	next.Queue.Concurrency = 4
	c, err := s.Families().Change(ctx, next, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the concurrent update never ran")
	}
	if c.Updated != 2 || c.Kept != 1 {
		t.Fatalf("want 2 updated, 1 kept (cust-5), have %+v", c)
	}
	if got := mustQueue(t, s, "cust-5"); got.Concurrency != 1 {
		t.Fatalf("cust-5: want the operator's concurrency 1, have %d", got.Concurrency)
	}
	if got := mustQueue(t, s, "cust-9"); got.Concurrency != 4 {
		t.Fatalf("cust-9: want the family's concurrency 4, have %d", got.Concurrency)
	}
}

// A change of a family of 2,500 queues is one multi per registry bucket
// its queues are in (the buckets spread over 1,024), not one write per
// queue, and no single write.
func TestChangeFamilyBatchesByBucket(t *testing.T) {
	t.Parallel()
	var cc *pauseWriteCounter
	s := connectWrapped(t, testenv.ZooKeeper(t).Addrs, testenv.Chroot(t), 20*testTimeout, func(conn zkConn, cfg Config) zkConn {
		cc = &pauseWriteCounter{zkConn: conn}
		return cc
	})
	ctx := ctxT(t)
	f := drover.FamilyConfig{Name: "bulk", Prefix: "bulk-", Queue: drover.QueueConfig{Concurrency: 2, Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true", strings.Repeat("x", 200)}}}}}
	if err := s.Families().Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	var names []string
	buckets := map[string]bool{}
	for i := range 2500 {
		q := fmt.Sprintf("bulk-%04d", i)
		names = append(names, q)
		buckets[registryBucket(q)] = true
	}
	registerFamilyQueues(t, s, f, names...)
	// The first change in a bucket's life also creates the bucket's config
	// notice (notice.go): one failed multi and one create per bucket, once.
	warm := f
	warm.Queue.Concurrency = 5
	if _, err := s.Families().Change(ctx, warm, -1); err != nil {
		t.Fatal(err)
	}
	next := f
	next.Queue.Concurrency = 3
	m0, c0, s0 := cc.multis.Load(), cc.creates.Load(), cc.sets.Load()
	start := time.Now()
	c, err := s.Families().Change(ctx, next, -1)
	t.Logf("ChangeFamily of %d queues in %d buckets: %s, %d multis", len(names), len(buckets), time.Since(start), cc.multis.Load()-m0)
	if err != nil || c.Updated != len(names) || c.Kept != 0 {
		t.Fatalf("ChangeFamily: want %d updated, have %+v, %v", len(names), c, err)
	}
	m, cr, st := cc.multis.Load()-m0, cc.creates.Load()-c0, cc.sets.Load()-s0
	if m != int64(len(buckets)) || cr != 0 || st != 1 {
		t.Fatalf("want %d multis (one per bucket) and the family's one set, have %d multis, %d creates, %d sets", len(buckets), m, cr, st)
	}
	qs, err := s.Queues().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range qs {
		if e.Config.Concurrency != 3 {
			t.Fatalf("%s: want concurrency 3, have %d", e.Name, e.Config.Concurrency)
		}
	}
}

// An owner hears of a family's change through its config watch, as of any
// config change (the bucket's data watch): a running queue takes the new
// rate limit without a rebalance (the reconciler hands it to
// Runner.Configure).
func TestChangeFamilyReachesTheConfigWatch(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s := connect(t, server.Addrs, root)
	owner := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	f := drover.FamilyConfig{Name: "cust", Prefix: "cust-", Queue: drover.QueueConfig{RateLimit: drover.RateLimit{PerSecond: 5}}}
	if err := s.Families().Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	registerFamilyQueues(t, s, f, "cust-1")
	w := owner.Queues().WatchConfigs(ctx)
	if e, err := w.Read(ctx, "cust-1"); err != nil || e.Config.RateLimit.PerSecond != 5 {
		t.Fatalf("owner's read: want rate 5, have %+v, %v", e.Config, err)
	}
	// Two changes: the first event after a config is followed rereads it
	// anyway; the second is heard only through its revision in the bucket.
	for _, rate := range []float64{12, 13} {
		next := f
		next.Queue.RateLimit.PerSecond = rate
		if c, err := s.Families().Change(ctx, next, -1); err != nil || c.Updated != 1 {
			t.Fatalf("ChangeFamily to %g: want 1 updated, have %+v, %v", rate, c, err)
		}
		waitConfig(t, w, "cust-1", func(c drover.QueueConfig) bool { return c.RateLimit.PerSecond == rate })
		f = next
	}
}

func waitConfig(t *testing.T, w *ConfigWatch, q string, ok func(drover.QueueConfig) bool) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case e := <-w.Changes():
			if e.Name == q && ok(e.Config) {
				return
			}
		case <-timeout:
			t.Fatalf("the owner's config watch never delivered %s's new config", q)
		}
	}
}
