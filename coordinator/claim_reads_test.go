package coordinator

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// overlapConn notes, for each read of an offset node, whether the owner
// node of the same queue was read in the same request.
type overlapConn struct {
	zkConn
	together atomic.Int64 // offset reads with their owner node in the same request
	alone    atomic.Int64 // offset reads without it
}

func (c *overlapConn) note(paths []string) {
	for _, p := range paths {
		if !strings.Contains(p, "/"+offsetsDir+"/") {
			continue
		}
		if slices.Contains(paths, strings.Replace(p, "/"+offsetsDir+"/", "/"+ownersDir+"/", 1)) {
			c.together.Add(1)
		} else {
			c.alone.Add(1)
		}
	}
}

func (c *overlapConn) Get(p string) ([]byte, *zk.Stat, error) {
	c.note([]string{p})
	return c.zkConn.Get(p)
}

func (c *overlapConn) MultiRead(ops ...any) ([]zk.MultiReadResponse, error) {
	c.note(readOpPaths(ops))
	return c.zkConn.MultiRead(ops...)
}

// A claim of a queue claimed before reads its owner node in the same
// request as its offset (one multiRead, coalesced with the session's
// other reads), not after the reply: one round trip and one request less
// per claim of a member that gains thousands (a join at a million queues).
func TestClaimReadsTheOwnerNodeWithTheOffset(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	var cc *overlapConn
	s := connectWrapped(t, server.Addrs, root, 20*testTimeout, func(conn zkConn, cfg Config) zkConn {
		cc = &overlapConn{zkConn: conn}
		return cc
	})
	other := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	old, err := other.Claims().Claim(ctx, "moved", Owner{Member: "o"})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Release(ctx, drover.Offset{Position: 7}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claims().Claim(ctx, "moved", Owner{Member: "m"})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if got := c.Offset().Position; got != 7 {
		t.Fatalf("claim: offset %d, want the 7 released", got)
	}
	if o, a := cc.together.Load(), cc.alone.Load(); o != 1 || a != 0 {
		t.Fatalf("offset reads with the owner node read in the same request: want 1 of 1, have %d (and %d alone)", o, a)
	}
	// Still owned: refused, as before.
	if _, err := other.Claims().Claim(ctx, "moved", Owner{Member: "o"}); err == nil {
		t.Fatal("a second session claimed a queue this session owns")
	}
}
