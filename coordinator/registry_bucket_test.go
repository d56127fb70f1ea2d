package coordinator

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// countingConn counts the reads a session sends, by kind of path.
type countingConn struct {
	zkConn
	queuesDir string

	mu           sync.Mutex
	configReads  int // Get/GetW/Exists of /queues/<bucket>/<queue>
	bucketReads  int // Get/GetW of /queues/<bucket>
	bucketExists int // Exists of /queues/<bucket>
	exists       int // every Exists
}

func (c *countingConn) count(p string, exists bool) {
	rel, ok := strings.CutPrefix(p, c.queuesDir+"/")
	c.mu.Lock()
	defer c.mu.Unlock()
	if exists {
		c.exists++
	}
	switch {
	case !ok:
	case strings.Contains(rel, "/"):
		c.configReads++
	case exists:
		c.bucketExists++
	default:
		c.bucketReads++
	}
}

func (c *countingConn) Get(p string) ([]byte, *zk.Stat, error) {
	c.count(p, false)
	return c.zkConn.Get(p)
}

// MultiRead counts each node read, as Get does.
func (c *countingConn) MultiRead(ops ...any) ([]zk.MultiReadResponse, error) {
	for _, p := range readOpPaths(ops) {
		c.count(p, false)
	}
	return c.zkConn.MultiRead(ops...)
}

func (c *countingConn) GetW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	c.count(p, false)
	return c.zkConn.GetW(p)
}

func (c *countingConn) Exists(p string) (bool, *zk.Stat, error) {
	c.count(p, true)
	return c.zkConn.Exists(p)
}

func (c *countingConn) ExistsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	c.count(p, true)
	return c.zkConn.ExistsW(p)
}

type readCounts struct{ configReads, bucketReads, bucketExists, exists int }

func (c *countingConn) counts() readCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return readCounts{c.configReads, c.bucketReads, c.bucketExists, c.exists}
}

// connectCounting opens a session whose connection counts its reads.
func connectCounting(t *testing.T, servers []string, root string) (*Session, *countingConn) {
	var cc *countingConn
	s := connectWrapped(t, servers, root, 20*testTimeout, func(conn zkConn, cfg Config) zkConn {
		cc = &countingConn{zkConn: conn, queuesDir: cfg.Root + "/" + queuesDir}
		return cc
	})
	return s, cc
}

// registered returns the registry's queues by name.
func registered(r Registry) map[string]RegisteredQueue {
	out := make(map[string]RegisteredQueue, r.Len())
	for q := range r.All() {
		out[q.Name] = q
	}
	return out
}

// A leader taking over learns every queue — its weight and tags too — from
// the registry's bucket nodes: one read per bucket, none per queue config
// (at a million queues the per-config reads made a takeover take minutes).
// A weight or tag change reaches it through the bucket, and costs it one
// bucket read; its cluster stats take no bucket read.
func TestRegistryWatchReadsBucketsNotConfigs(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	admin := connect(t, server.Addrs, root, patient)
	const n = 3000
	createQueues(t, admin, n)
	ctx := ctxLong(t)
	if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: "gpu", Weight: 5, Tags: []string{"cuda", "big"}}); err != nil {
		t.Fatal(err)
	}

	leader, cc := connectCounting(t, server.Addrs, root)
	watch := leader.Queues().WatchRegistry(ctx)
	reg := untilCtx(ctx, t, watch, "every queue", func(r Registry) bool { return r.Len() == n+1 })
	got := registered(reg)
	if q := got["gpu"]; q.Weight != 5 || !slices.Equal(q.Tags, []string{"cuda", "big"}) {
		t.Fatalf("gpu from its bucket: want weight 5 and tags [cuda big], have %+v", q)
	}
	if q := got["q0000007"]; q.Weight != 0 || q.Tags != nil {
		t.Fatalf("q0000007 from its bucket: want no weight and no tags, have %+v", q)
	}
	c := cc.counts()
	if c.configReads != 0 {
		t.Fatalf("takeover: want no queue config read, have %d", c.configReads)
	}
	if c.bucketReads > registryBuckets {
		t.Fatalf("takeover: want at most one read per bucket (%d), have %d", registryBuckets, c.bucketReads)
	}
	if paths := leader.hub.paths(); paths > registryBuckets+1 {
		t.Fatalf("watched paths: want at most the buckets and /queues (%d), have %d", registryBuckets+1, paths)
	}

	e, err := admin.Queues().Get(ctx, "q0000042")
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.Config
	cfg.Weight, cfg.Tags = 9, []string{"cuda"}
	if _, err := admin.Queues().Update(ctx, cfg, e.Version); err != nil {
		t.Fatal(err)
	}
	untilCtx(ctx, t, watch, "the weight and tags of q0000042", func(r Registry) bool {
		q := registered(r)["q0000042"]
		return q.Weight == 9 && slices.Equal(q.Tags, []string{"cuda"})
	})
	after := cc.counts()
	if after.configReads != 0 || after.bucketReads != c.bucketReads+1 {
		t.Fatalf("a change: want one bucket read and no config read, have %d bucket and %d config reads",
			after.bucketReads-c.bucketReads, after.configReads)
	}

	// A change that does not touch the weight or tags (concurrency) leaves
	// the bucket alone: the leader hears nothing.
	e, _ = admin.Queues().Get(ctx, "q0000042")
	cfg = e.Config
	cfg.Concurrency = 3
	if _, err := admin.Queues().Update(ctx, cfg, e.Version); err != nil {
		t.Fatal(err)
	}
	bucket, _, err := admin.conn.Get(admin.path(queuesDir, registryBucket("q0000042")))
	if err != nil {
		t.Fatal(err)
	}
	var bd bucketData
	if err := json.Unmarshal(bucket, &bd); err != nil || bd.Weight["q0000042"] != 9 {
		t.Fatalf("bucket after a concurrency change: want weight 9 kept, have %s (%v)", bucket, err)
	}

	st0 := cc.counts()
	stats, err := leader.Group().Stats(ctx)
	if err != nil || stats.Queues != n+1 {
		t.Fatalf("cluster stats: want %d queues, have %+v (%v)", n+1, stats, err)
	}
	if d := cc.counts(); d.bucketExists != st0.bucketExists || d.exists-st0.exists != 3 {
		t.Fatalf("cluster stats of a session watching the registry: want 3 reads and none per bucket, have %d reads, %d of buckets",
			d.exists-st0.exists, d.bucketExists-st0.bucketExists)
	}
}

// Writers that race on one bucket never leave a config and its bucket entry
// disagreeing: each write is one multi checked against the bucket's version,
// and the loser reads the bucket again.
func TestConcurrentUpdatesKeepBucketAndConfigsInStep(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	ctx := ctxLong(t)
	admins := []*Session{connect(t, server.Addrs, root), connect(t, server.Addrs, root), connect(t, server.Addrs, root)}
	// Queues that share one bucket.
	var names []string
	want := registryBucket("same-0")
	for i := 0; len(names) < 6; i++ {
		if q := fmt.Sprintf("same-%d", i); registryBucket(q) == want {
			names = append(names, q)
		}
	}
	for _, q := range names {
		if err := admins[0].Queues().Create(ctx, drover.QueueConfig{Name: q}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w, s := range admins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 5 {
				for i, q := range names {
					weight := 1 + w*100 + round*10 + i
					if _, err := s.Queues().Update(ctx, drover.QueueConfig{Name: q, Weight: weight, Tags: []string{fmt.Sprint("t", weight)}}, -1); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent update: %v", err)
	}
	data, _, err := admins[0].conn.Get(admins[0].path(queuesDir, want))
	if err != nil {
		t.Fatal(err)
	}
	bd, err := decodeBucket(want, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range names {
		e, err := admins[0].Queues().Get(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !bd.same(e.Config) {
			t.Fatalf("%s: config has weight %d tags %v, bucket has %d %v", q, e.Config.Weight, e.Config.Tags, bd.Weight[q], bd.Tags[q])
		}
	}
}

// A bucket's data grows with its queues' names, weights and tags: it stops
// at maxBucketBytes with a clear error, never a request the server refuses.
func TestBucketDataLimitIsAClearError(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s := connect(t, server.Addrs, testenv.Chroot(t), patient)
	ctx := ctxLong(t)
	want := registryBucket("x")
	// Longest names and two tags each: about 250 bytes of bucket per queue.
	long := func(i int) string {
		p := fmt.Sprintf("%d-", i)
		return p + strings.Repeat("n", drover.MaxQueueNameLen-len(p))
	}
	var cfgs []drover.QueueConfig
	for i := 0; len(cfgs)*250 < maxBucketBytes+50_000; i++ {
		if q := long(i); registryBucket(q) == want {
			cfgs = append(cfgs, drover.QueueConfig{Name: q, Tags: []string{"region-eu", "tier-1"}})
		}
	}
	created, err := s.Queues().CreateMany(ctx, cfgs)
	mustIs(t, err, ErrTooLarge, "fill a bucket past its data limit")
	if !strings.Contains(err.Error(), "bytes") || !strings.Contains(err.Error(), want) {
		t.Fatalf("want an error naming the bucket and its size, have %v", err)
	}
	if created == 0 || created >= len(cfgs) {
		t.Fatalf("want the queues that fit created (some, not all %d), have %d", len(cfgs), created)
	}
	data, _, err := s.conn.Get(s.path(queuesDir, want))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > maxBucketBytes {
		t.Fatalf("bucket data: want at most %d bytes, have %d", maxBucketBytes, len(data))
	}
	bd, err := decodeBucket(want, data)
	if err != nil || len(bd.Queues) != created {
		t.Fatalf("bucket lists %d queues, %d were created (%v)", len(bd.Queues), created, err)
	}
	var extra string
	for i := len(cfgs) * 2000; extra == ""; i++ {
		if q := long(i); registryBucket(q) == want {
			extra = q
		}
	}
	err = s.Queues().Create(ctx, drover.QueueConfig{Name: extra, Tags: []string{"region-eu", "tier-1"}})
	mustIs(t, err, ErrTooLarge, "create one more in a full bucket")
	// The registry is still readable and writable elsewhere.
	other := "elsewhere"
	if registryBucket(other) == want {
		other = "elsewhere-too"
	}
	if err := s.Queues().Create(ctx, drover.QueueConfig{Name: other}); err != nil {
		t.Fatalf("create in another bucket: %v", err)
	}
	reg := next(t, s.Queues().WatchRegistry(ctx), "registry")
	if reg.Len() != created+1 {
		t.Fatalf("registry: want %d queues, have %d", created+1, reg.Len())
	}
}

// A bucket's data as other writers may leave it: unsorted, with duplicates,
// empty, or naming weights of queues it does not list.
func TestBucketDataDecodingAndEdits(t *testing.T) {
	b, err := decodeBucket("/b", []byte(`{"queues":["c","a","c","b"],"weight":{"a":3,"zz":9},"tags":{"b":["x"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Queues, []string{"a", "b", "c"}) || len(b.Weight) != 1 {
		t.Fatalf("queues: want [a b c] and the weight of a only, have %+v", b)
	}
	got := b.pack(map[string][]string{})
	if got.len() != 3 || got.at(0).Name != "a" || got.at(0).Weight != 3 || got.at(1).Name != "b" || !slices.Equal(got.at(1).Tags, []string{"x"}) || got.at(2).Name != "c" || got.at(2).Weight != 0 {
		t.Fatalf("packed: have %+v", got)
	}
	if empty, err := decodeBucket("/b", nil); err != nil || len(empty.Queues) != 0 {
		t.Fatalf("empty data: want an empty bucket, have %+v (%v)", empty, err)
	}
	if _, err := decodeBucket("/queues/0ab", []byte("{nope")); err == nil || !strings.Contains(err.Error(), "/queues/0ab") {
		t.Fatalf("corrupt data: want an error naming the bucket, have %v", err)
	}
	b.put(drover.QueueConfig{Name: "aa", Weight: 2, Tags: []string{"gpu"}})
	b.put(drover.QueueConfig{Name: "a"}) // weight back to the default
	b.remove("b")
	if !slices.Equal(b.Queues, []string{"a", "aa", "c"}) || b.Weight["a"] != 0 || b.Tags["b"] != nil {
		t.Fatalf("after edits: have %+v", b)
	}
	if !b.same(drover.QueueConfig{Name: "aa", Weight: 2, Tags: []string{"gpu"}}) || b.same(drover.QueueConfig{Name: "aa", Weight: 2}) {
		t.Fatal("same: want true for equal weight and tags only")
	}
	// Equal tag sets share one slice.
	shared := map[string][]string{}
	e := bucketData{Queues: []string{"p", "q"}, Tags: map[string][]string{"p": {"t"}, "q": {"t"}}}.pack(shared)
	if &e.at(0).Tags[0] != &e.at(1).Tags[0] {
		t.Fatal("equal tags: want one shared slice")
	}
}

// A config node written without its bucket entry (a writer outside Drover)
// is listed in its bucket by the next create of that queue, which still
// reports that the queue exists: the leader reads the buckets only.
func TestAConfigWithoutItsBucketEntryIsAdopted(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s := connect(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	for _, q := range []string{"seed-a", "seed-b"} { // creates the buckets
		if err := s.Queues().Create(ctx, drover.QueueConfig{Name: q}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"foreign-a", "foreign-b"} {
		bp := s.path(queuesDir, registryBucket(q))
		if _, err := s.conn.Create(bp, nil, zk.FlagPersistent, s.acl); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
		if _, err := s.conn.Create(bp+"/"+q, []byte(`{"name":"`+q+`","weight":4}`), zk.FlagPersistent, s.acl); err != nil {
			t.Fatal(err)
		}
	}
	watch := s.Queues().WatchRegistry(ctx)
	if r := next(t, watch, "registry"); registered(r)["foreign-a"].Name != "" {
		t.Fatalf("a config without its bucket entry: want it unlisted, have %+v", registered(r))
	}
	mustIs(t, s.Queues().Create(ctx, drover.QueueConfig{Name: "foreign-a"}), ErrQueueExists, "create a queue configured outside Drover")
	n, err := s.Queues().CreateMany(ctx, []drover.QueueConfig{{Name: "foreign-b"}, {Name: "new-c"}})
	if err != nil || n != 1 {
		t.Fatalf("create foreign-b (exists) and new-c: want 1 created, have %d (%v)", n, err)
	}
	until(t, watch, "the adopted queues", func(r Registry) bool {
		got := registered(r)
		return got["foreign-a"].Weight == 4 && got["foreign-b"].Weight == 4 && got["new-c"].Name == "new-c"
	})
}

// A batch whose reply was lost is settled by the next read of its bucket:
// nothing is created twice, nothing is reported failed, and the count is
// right.
func TestCreateQueuesSettlesALostReply(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s, fc := connectFaulty(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	var cfgs []drover.QueueConfig
	for i := range 20 {
		cfgs = append(cfgs, drover.QueueConfig{Name: fmt.Sprintf("lost-%02d", i)})
	}
	fc.lose(1, true) // applied, reply lost
	n, err := s.Queues().CreateMany(ctx, cfgs)
	if err != nil || n != len(cfgs) {
		t.Fatalf("create with a lost reply: want %d created, have %d (%v)", len(cfgs), n, err)
	}
	names, err := s.Queues().Names(ctx)
	if err != nil || len(names) != len(cfgs) {
		t.Fatalf("queue names: want %d, have %v (%v)", len(cfgs), names, err)
	}
	fc.lose(1, false) // not applied, reply lost
	more := []drover.QueueConfig{{Name: "lost-more"}}
	if n, err := s.Queues().CreateMany(ctx, more); err != nil || n != 1 {
		t.Fatalf("create with a lost, unapplied write: want 1 created, have %d (%v)", n, err)
	}
}
