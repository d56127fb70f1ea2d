package coordinator

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// readCountConn counts the requests that read nodes.
type readCountConn struct {
	zkConn
	reads atomic.Int64 // exists, getData and multiRead requests
}

func (c *readCountConn) Exists(p string) (bool, *zk.Stat, error) {
	c.reads.Add(1)
	return c.zkConn.Exists(p)
}

func (c *readCountConn) Get(p string) ([]byte, *zk.Stat, error) {
	c.reads.Add(1)
	return c.zkConn.Get(p)
}

func (c *readCountConn) MultiRead(ops ...any) ([]zk.MultiReadResponse, error) {
	c.reads.Add(1)
	return c.zkConn.MultiRead(ops...)
}

// verifyAll verifies every claim at once, as a member's queue loops do
// after a suspension, and returns each one's error.
func verifyAll(t *testing.T, claims []*Claim) []error {
	ctx := ctxT(t)
	return parallelMapN(ctx, len(claims), claims, func(c *Claim) error { return c.Verify(ctx) })
}

// Claims verified together share their requests: a member verifies every
// claim it holds after a suspension, and with two exists requests a claim
// a member of 12,500 queues sent 25,000 requests at once. A claim that no
// longer holds is still told apart from the others in a shared request:
// its offset reset by an operator, or its owner node gone.
func TestClaimsVerifiedTogetherShareRequests(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	var cc *readCountConn
	s := connectWrapped(t, server.Addrs, root, 20*testTimeout, func(conn zkConn, cfg Config) zkConn {
		cc = &readCountConn{zkConn: conn}
		return cc
	})
	other := connect(t, server.Addrs, root)
	ctx := ctxT(t)

	const n = 300
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("v%03d", i)
	}
	claims := parallelMapN(ctx, n, names, func(q string) *Claim {
		c, err := s.Claims().Claim(ctx, q, Owner{Member: "m"})
		if err != nil {
			t.Errorf("claim %s: %v", q, err)
		}
		return c
	})
	if t.Failed() {
		t.FailNow()
	}

	before := cc.reads.Load()
	for i, err := range verifyAll(t, claims) {
		if err != nil {
			t.Fatalf("verify %s, which holds: %v", claims[i].queue, err)
		}
	}
	// Two nodes a claim: 600 reads, at most 256 a request.
	if sent := cc.reads.Load() - before; sent > n/10 {
		t.Fatalf("verifying %d claims at once sent %d read requests; want at most %d (shared requests)", n, sent, n/10)
	}

	// One offset reset, one owner node deleted: those two are fenced, the
	// others hold.
	if _, err := other.Claims().ResetOffset(ctx, "v007", drover.Offset{}, ResetOptions{AllowOwned: true}); err != nil {
		t.Fatal(err)
	}
	if err := other.conn.(*zk.Conn).Delete(root+"/"+ownersDir+"/v123", -1); err != nil {
		t.Fatal(err)
	}
	for i, err := range verifyAll(t, claims) {
		q := claims[i].queue
		switch fenced := errors.Is(err, drover.ErrFenced); {
		case (q == "v007" || q == "v123") && !fenced:
			t.Errorf("verify %s, which no longer holds: want ErrFenced, have %v", q, err)
		case q != "v007" && q != "v123" && err != nil:
			t.Errorf("verify %s, which holds: %v", q, err)
		}
	}
}
