package coordinator

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// offsetReadConn counts the reads of offset nodes.
type offsetReadConn struct {
	zkConn
	reads atomic.Int64
}

func (c *offsetReadConn) Get(p string) ([]byte, *zk.Stat, error) {
	c.count(p)
	return c.zkConn.Get(p)
}

func (c *offsetReadConn) MultiRead(ops ...any) ([]zk.MultiReadResponse, error) {
	for _, p := range readOpPaths(ops) {
		c.count(p)
	}
	return c.zkConn.MultiRead(ops...)
}

func (c *offsetReadConn) count(p string) {
	if strings.Contains(p, "/"+offsetsDir+"/") {
		c.reads.Add(1)
	}
}

// A claim with Owner.New (the queue was placed as new to the fleet) sends
// no read for a queue never claimed, and claims as usual — the offset kept,
// the earlier owner fenced — when the hint is wrong.
func TestClaimOfANewQueueReadsNothingAndToleratesAWrongHint(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	var cc *offsetReadConn
	s := connectWrapped(t, server.Addrs, root, 20*testTimeout, func(conn zkConn, cfg Config) zkConn {
		cc = &offsetReadConn{zkConn: conn}
		return cc
	})
	other := connect(t, server.Addrs, root)
	ctx := ctxT(t)

	c, err := s.Claims().Claim(ctx, "fresh", Owner{Member: "m", New: true})
	if err != nil {
		t.Fatalf("claim a new queue: %v", err)
	}
	if n := cc.reads.Load(); n != 0 {
		t.Fatalf("claim of a new queue read %d offset nodes, want none", n)
	}
	if err := c.Commit(ctx, drover.Offset{Position: 3}); err != nil {
		t.Fatalf("commit on the new claim: %v", err)
	}

	// The hint is wrong: the queue was claimed before, its offset at 5.
	old, err := other.Claims().Claim(ctx, "used", Owner{Member: "o"})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Release(ctx, drover.Offset{Position: 5}); err != nil {
		t.Fatal(err)
	}
	c2, err := s.Claims().Claim(ctx, "used", Owner{Member: "m", New: true})
	if err != nil {
		t.Fatalf("claim with a wrong hint: %v", err)
	}
	if got := c2.Offset().Position; got != 5 {
		t.Fatalf("claim with a wrong hint: offset %d, want the 5 released", got)
	}
	if cc.reads.Load() == 0 {
		t.Fatal("a wrong hint must fall back to reading the offset")
	}
	// Still owned by another session: refused as usual.
	if _, err := other.Claims().Claim(ctx, "used", Owner{Member: "o", New: true}); err == nil {
		t.Fatal("a second owner claimed a queue owned by this session")
	}
}
