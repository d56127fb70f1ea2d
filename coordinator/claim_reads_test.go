package coordinator

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// overlapConn holds each read of an offset node until the owner check of
// the same queue has been sent, and counts the reads that saw it sent.
type overlapConn struct {
	zkConn
	ownerChecked chan struct{} // closed by the first Exists of an owner node
	once         atomic.Bool
	overlapped   atomic.Int64 // offset reads that waited for the check and saw it
	alone        atomic.Int64 // offset reads the check did not come beside
}

func (c *overlapConn) Exists(p string) (bool, *zk.Stat, error) {
	if strings.Contains(p, "/"+ownersDir+"/") && c.once.CompareAndSwap(false, true) {
		close(c.ownerChecked)
	}
	return c.zkConn.Exists(p)
}

func (c *overlapConn) Get(p string) ([]byte, *zk.Stat, error) {
	if strings.Contains(p, "/"+offsetsDir+"/") {
		// A guard, not a synchronisation: code that sends the check only
		// after this read's reply would wait here forever without it.
		select {
		case <-c.ownerChecked:
			c.overlapped.Add(1)
		case <-time.After(5 * time.Second):
			c.alone.Add(1)
		}
	}
	return c.zkConn.Get(p)
}

// A claim of a queue claimed before sends its owner check with its offset
// read, not after the reply: one round trip less per claim of a member that
// gains thousands (a join at a million queues).
func TestClaimSendsTheOwnerCheckWithTheOffsetRead(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	var cc *overlapConn
	s := connectWrapped(t, server.Addrs, root, 20*testTimeout, func(conn zkConn, cfg Config) zkConn {
		cc = &overlapConn{zkConn: conn, ownerChecked: make(chan struct{})}
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
	if o, a := cc.overlapped.Load(), cc.alone.Load(); o != 1 || a != 0 {
		t.Fatalf("offset reads with the owner check sent beside them: want 1 of 1, have %d (and %d alone)", o, a)
	}
	// Still owned: refused, as before.
	if _, err := other.Claims().Claim(ctx, "moved", Owner{Member: "o"}); err == nil {
		t.Fatal("a second session claimed a queue this session owns")
	}
}
