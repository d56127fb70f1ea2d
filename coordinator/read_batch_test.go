package coordinator

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/proxy"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// The patched client's MultiRead against the real server (3.8): every
// getData answered with its data and stat, a missing node failing its own
// op alone, getChildren answered with the children.
func TestMultiReadAnswersEachReadAlone(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s := connect(t, server.Addrs, root)
	a, b, missing := root+"/mr-a", root+"/mr-b", root+"/mr-missing"
	for p, data := range map[string]string{a: "alpha", b: "beta"} {
		if _, err := s.conn.Create(p, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.conn.Set(b, []byte("beta2"), 0); err != nil {
		t.Fatal(err)
	}
	res, err := s.conn.MultiRead(&zk.GetDataOp{Path: a}, &zk.GetDataOp{Path: missing}, &zk.GetDataOp{Path: b}, &zk.GetChildrenOp{Path: root})
	if err != nil {
		t.Fatalf("multiRead with a missing node: want each op answered alone, have the request failing: %v", err)
	}
	if len(res) != 4 {
		t.Fatalf("multiRead of 4 ops: have %d replies", len(res))
	}
	if string(res[0].Data) != "alpha" || res[0].Error != nil || res[0].Stat == nil || res[0].Stat.Version != 0 {
		t.Fatalf("read of %s: want alpha at version 0, have %q %+v (%v)", a, res[0].Data, res[0].Stat, res[0].Error)
	}
	if !errors.Is(res[1].Error, zk.ErrNoNode) {
		t.Fatalf("read of a missing node: want ErrNoNode, have %v", res[1].Error)
	}
	if string(res[2].Data) != "beta2" || res[2].Error != nil || res[2].Stat == nil || res[2].Stat.Version != 1 {
		t.Fatalf("read of %s: want beta2 at version 1, have %q %+v (%v)", b, res[2].Data, res[2].Stat, res[2].Error)
	}
	if !slices.Contains(res[3].Children, "mr-a") || !slices.Contains(res[3].Children, "mr-b") {
		t.Fatalf("children of %s: want mr-a and mr-b among them, have %v", root, res[3].Children)
	}
	// The same through the session's coalescer.
	rr, err := s.reads.get(ctxT(t), a, missing)
	if err != nil || string(rr[0].nd.data) != "alpha" || !errors.Is(rr[1].err, zk.ErrNoNode) {
		t.Fatalf("coalesced read: want alpha and ErrNoNode, have %+v (%v)", rr, err)
	}
}

// Many claims and config reads of a member at once (a join, a start) read
// their nodes in fewer requests than there are claims: counted on the
// wire, so the same test of the code before multiRead (two read requests
// a claim: the offset and the owner check; one a config) fails.
func TestConcurrentClaimsReadInFewerRequestsThanClaims(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	px, err := proxy.New(server.Addr, proxy.CountZooKeeper())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	admin := connect(t, server.Addrs, root)
	s := connect(t, []string{px.Addr}, root)
	ctx := ctxT(t)
	const claims = 64
	queues := oneBucketQueues(claims)
	for _, q := range queues {
		if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: q, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
		// Claimed before: a claim reads its offset and its owner node.
		c, err := admin.Claims().Claim(ctx, q, Owner{Member: "old"})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Release(ctx, offsetAt(3, "old")); err != nil {
			t.Fatal(err)
		}
	}
	all := func(f func(q string) error) {
		t.Helper()
		errs := make([]error, len(queues))
		var wg sync.WaitGroup
		for i, q := range queues {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f(q)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}

	before := px.Counts()
	all(func(q string) error {
		c, err := s.Claims().Claim(ctx, q, Owner{Member: "m"})
		if err == nil && c.Offset().Position != 3 {
			err = fmt.Errorf("claim of %s: want the released offset 3, have %d", q, c.Offset().Position)
		}
		return err
	})
	claimed := px.Counts().Sub(before)
	t.Logf("%d claims: %d read requests, %d write requests", claims, claimed.Reads, claimed.Writes)
	if claimed.Reads >= claims {
		t.Fatalf("%d concurrent claims: want fewer read requests than claims, have %d (by op: %v)", claims, claimed.Reads, claimed.ByOp)
	}

	w := s.Queues().WatchConfigs(ctx)
	before = px.Counts()
	all(func(q string) error {
		e, err := w.Read(ctx, q)
		if err == nil && (e.Err != nil || e.Config.Concurrency != 1) {
			err = fmt.Errorf("config of %s: want concurrency 1, have %+v", q, e)
		}
		return err
	})
	read := px.Counts().Sub(before)
	t.Logf("%d config reads (one bucket): %d read requests", claims, read.Reads)
	if read.Reads >= claims {
		t.Fatalf("%d concurrent config reads: want fewer read requests than reads, have %d (by op: %v)", claims, read.Reads, read.ByOp)
	}
}

// gatedConn holds the first MultiRead until released, and records the
// number of ops of each.
type gatedConn struct {
	zkConn
	entered, release chan struct{}
	once             sync.Once
	mu               sync.Mutex
	sizes            []int
}

func (g *gatedConn) MultiRead(ops ...any) ([]zk.MultiReadResponse, error) {
	g.mu.Lock()
	g.sizes = append(g.sizes, len(ops))
	first := len(g.sizes) == 1
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.release
	}
	return g.zkConn.MultiRead(ops...)
}

// Readers arriving while a multiRead is in flight go out together in the
// next one, each getting its own nodes (a missing one failing alone).
func TestReadersWaitingForAReadGoInOneRequest(t *testing.T) {
	t.Parallel()
	s, g, root := gatedSession(t)
	ctx := ctxT(t)
	const readers = 10
	for i := range readers {
		if _, err := s.conn.Create(fmt.Sprintf("%s/n%d", root, i), []byte(fmt.Sprint(i)), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	first := make(chan error, 1)
	go func() {
		_, err := s.reads.get(ctx, root+"/n0")
		first <- err
	}()
	<-g.entered
	res := make([][]readResult, readers)
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = s.reads.get(ctx, fmt.Sprintf("%s/n%d", root, i), fmt.Sprintf("%s/gone%d", root, i))
		}()
	}
	for { // until every reader waits for the one in flight
		s.reads.mu.Lock()
		n := len(s.reads.pending)
		s.reads.mu.Unlock()
		if n == readers {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("readers queued: want %d, have %d", readers, n)
		}
		runtime.Gosched()
	}
	close(g.release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	sizes := slices.Clone(g.sizes)
	g.mu.Unlock()
	if !slices.Equal(sizes, []int{1, 2 * readers}) {
		t.Fatalf("multiReads: want one of 1 read then one of %d, have %v", 2*readers, sizes)
	}
	for i := range readers {
		if errs[i] != nil || string(res[i][0].nd.data) != fmt.Sprint(i) || !errors.Is(res[i][1].err, zk.ErrNoNode) {
			t.Fatalf("reader %d: want its node %d and ErrNoNode, have %+v (%v)", i, i, res[i], errs[i])
		}
	}
	if n := s.reads.requests.Load(); n != 2 {
		t.Fatalf("multiReads counted: want 2, have %d", n)
	}
}

// refusingConn answers MultiRead as a server older than 3.6 does.
type refusingConn struct {
	zkConn
	multiReads atomic.Int64
}

func (r *refusingConn) MultiRead(ops ...any) ([]zk.MultiReadResponse, error) {
	r.multiReads.Add(1)
	return nil, zk.ErrUnimplemented
}

// A server that refuses multiRead is asked once: claims and config reads
// go on with single reads for the rest of the session.
func TestReadsFallBackToSingleReadsWhenTheServerRefusesMultiRead(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	admin := connect(t, server.Addrs, root)
	rc := &refusingConn{}
	s := connectWrapped(t, server.Addrs, root, testTimeout, func(conn zkConn, cfg Config) zkConn {
		rc.zkConn = conn
		return rc
	})
	ctx := ctxT(t)
	old, err := admin.Claims().Claim(ctx, "q1", Owner{Member: "old"})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Release(ctx, offsetAt(4, "old")); err != nil {
		t.Fatal(err)
	}
	if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: "q1", Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claims().Claim(ctx, "q1", Owner{Member: "m"})
	if err != nil {
		t.Fatalf("claim against a server without multiRead: %v", err)
	}
	if c.Offset().Position != 4 {
		t.Fatalf("claim: want the released offset 4, have %d", c.Offset().Position)
	}
	if _, err := s.Claims().Claim(ctx, "q2", Owner{Member: "m"}); err != nil {
		t.Fatalf("claim of a queue never claimed: %v", err)
	}
	w := s.Queues().WatchConfigs(ctx)
	e, err := w.Read(ctx, "q1")
	if err != nil || e.Config.Concurrency != 2 {
		t.Fatalf("config read: want concurrency 2, have %+v (%v)", e, err)
	}
	// Still owned by this session: the owner check of single reads says so.
	if _, err := admin.Claims().Claim(ctx, "q1", Owner{Member: "other"}); !errors.Is(err, drover.ErrNotOwner) {
		t.Fatalf("claim of an owned queue: want ErrNotOwner, have %v", err)
	}
	if n := rc.multiReads.Load(); n != 1 {
		t.Fatalf("multiReads sent to a server that refused the first: want 1, have %d", n)
	}
	if !s.reads.single.Load() {
		t.Fatal("the session must read one by one after the server refused multiRead")
	}
}

// A reader whose context ends while it waits behind a read in flight
// leaves the batch: nothing is sent for it.
func TestAReaderGivingUpLeavesTheBatch(t *testing.T) {
	t.Parallel()
	s, g, root := gatedSession(t)
	ctx := ctxT(t)
	first := make(chan error, 1)
	go func() {
		_, err := s.reads.get(ctx, root)
		first <- err
	}()
	<-g.entered
	gctx, cancel := context.WithCancel(ctx)
	gave := make(chan error, 1)
	go func() {
		_, err := s.reads.get(gctx, root+"/x")
		gave <- err
	}()
	for {
		s.reads.mu.Lock()
		n := len(s.reads.pending)
		s.reads.mu.Unlock()
		if n == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the second reader never queued")
		}
		runtime.Gosched()
	}
	cancel()
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("reader that gave up: want context.Canceled, have %v", err)
	}
	close(g.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.Equal(g.sizes, []int{1}) {
		t.Fatalf("multiReads: want only the first (1 read), have %v", g.sizes)
	}
}

// A batch is cut by its count of reads, its request bytes and its reply's
// estimate from the largest node read so far.
func TestReadBatchCutsByCountRequestAndReplyEstimate(t *testing.T) {
	var b readBatcher
	steps := []struct {
		largest   int64
		ops, size int
		want      bool
	}{
		{0, maxReadsPerRequest, 1000, true},
		{0, maxReadsPerRequest + 1, 1000, false},
		{0, 10, batchBytes + 1, false},
		{100 << 10, 4, 1000, true},  // 4 × (100 KiB + overhead) under 448 KiB
		{100 << 10, 5, 1000, false}, // 5 × past it
		{300 << 10, 1, 1000, true},
	}
	for _, st := range steps {
		b.largest.Store(st.largest)
		if have := b.fits(st.ops, st.size); have != st.want {
			t.Fatalf("largest node %d bytes, %d reads of %d request bytes: want fits %v, have %v", st.largest, st.ops, st.size, st.want, have)
		}
	}
}

// gatedSession connects a session, under a root of its own, whose
// multiReads wait at g's gate.
func gatedSession(t *testing.T) (*Session, *gatedConn, string) {
	t.Helper()
	root := testenv.Chroot(t)
	g := &gatedConn{entered: make(chan struct{}), release: make(chan struct{})}
	s := connectWrapped(t, testenv.ZooKeeper(t).Addrs, root, testTimeout, func(conn zkConn, cfg Config) zkConn {
		g.zkConn = conn
		return g
	})
	return s, g, root
}
