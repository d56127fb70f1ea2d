package coordinator

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// disagreeingConn answers the reads of one node with a version one below
// the real one while the session is on the server it started on: a server
// whose data tree diverged from the leader's (ZooKeeper 3.8.0 kept a
// truncated transaction), seen from the client.
type disagreeingConn struct {
	zkConn
	path    string
	s       atomic.Pointer[Session]
	lyingOn atomic.Pointer[handshakeClampConn] // the connection it lies on
}

func (d *disagreeingConn) lying() bool {
	s := d.s.Load()
	return s != nil && s.contact.conn.Load() == d.lyingOn.Load()
}

func (d *disagreeingConn) MultiRead(ops ...any) ([]zk.MultiReadResponse, error) {
	res, err := d.zkConn.MultiRead(ops...)
	if err != nil || !d.lying() {
		return res, err
	}
	for i, op := range ops {
		if g, ok := op.(*zk.GetDataOp); ok && g.Path == d.path && i < len(res) && res[i].Stat != nil {
			st := *res[i].Stat
			st.Version--
			res[i].Stat = &st
		}
	}
	return res, err
}

// A claim whose server reads the offset's version twice as the leader
// refuses it is answered ErrServerDisagrees at once (not after five
// refusals), and the session moves to another server of the ensemble,
// where the next claim lands. Before, every claim of the queue failed
// with a version conflict for as long as the session stayed on that
// server (six minutes of a chaos run).
func TestAClaimRefusedOnADisagreeingServerMovesTheSession(t *testing.T) {
	t.Parallel()
	ens := testenv.ZKEnsemble(t)
	root := testenv.Chroot(t)
	ctx := ctxT(t)

	// The queue's offset node exists at a version above 0.
	prev := connect(t, ens.Addrs, root)
	c, err := prev.Claims().Claim(ctx, "q", Owner{Member: "a"})
	if err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if err := c.Release(ctx, offsetAt(3, "a")); err != nil {
		t.Fatalf("release: %v", err)
	}

	var dc *disagreeingConn
	s := connectWrapped(t, ens.Addrs, root, testTimeout, func(conn zkConn, _ Config) zkConn {
		dc = &disagreeingConn{zkConn: conn}
		return dc
	})
	dc.path = s.path(offsetsDir, "q")
	var told atomic.Int32 // OnServerDisagrees calls
	s.cfg.OnServerDisagrees = func(server string) {
		if server != "" && server != "?" {
			told.Add(1)
		}
	}
	first := s.contact.conn.Load()
	dc.lyingOn.Store(first)
	dc.s.Store(s)

	_, err = s.Claims().Claim(ctx, "q", Owner{Member: "b"})
	if !errorsIs(err, ErrServerDisagrees) || !errorsIs(err, zk.ErrBadVersion) {
		t.Fatalf("claim on the disagreeing server: want ErrServerDisagrees wrapping the refusal, have %v", err)
	}
	if s.movedAt.Load() == 0 {
		t.Fatal("the session did not move off the disagreeing server")
	}
	if n := told.Load(); n != 1 {
		t.Fatalf("OnServerDisagrees: want one call naming the server, have %d", n)
	}

	// The library reconnects to the next server; the claim lands there.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := s.Claims().Claim(cctx, "q", Owner{Member: "b"})
		if err == nil {
			break
		}
		if errorsIs(err, ErrServerDisagrees) || cctx.Err() != nil {
			t.Fatalf("claim after the move: %v (connection moved: %v)", err, s.contact.conn.Load() != first)
		}
		if on, oerr := s.Claims().Owner(cctx, "q"); oerr == nil && on.Session == s.SessionID() {
			break // a claim whose reply the move lost landed after all
		}
		// The connection is being replaced: the claim's read or multi
		// failed with it. Retried as the fleet does.
		if err := s.awaitConnected(cctx); err != nil {
			t.Fatal(err)
		}
	}
	if s.contact.conn.Load() == first {
		t.Fatal("the claim landed on the connection that disagreed")
	}
	if s.SessionID() == 0 || s.Err() != nil {
		t.Fatalf("the session did not survive the move: %v", s.Err())
	}
}
