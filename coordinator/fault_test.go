package coordinator

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// faultConn wraps a real connection and injects faults: lost multi replies
// and a session id moved on by the library.
type faultConn struct {
	zkConn
	mu         sync.Mutex
	loseReply  int  // lose the reply of this many multis
	skipApply  bool // ... without applying them
	sessionOff atomic.Int64
}

func (f *faultConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	f.mu.Lock()
	lose, skip := f.loseReply > 0, f.skipApply
	if lose {
		f.loseReply--
	}
	f.mu.Unlock()
	if lose {
		if !skip {
			f.zkConn.Multi(ops...)
		}
		return nil, zk.ErrConnectionClosed
	}
	return f.zkConn.Multi(ops...)
}

func (f *faultConn) SessionID() int64 { return f.zkConn.SessionID() + f.sessionOff.Load() }

func (f *faultConn) lose(n int, apply bool) {
	f.mu.Lock()
	f.loseReply, f.skipApply = n, !apply
	f.mu.Unlock()
}

// connectFaulty opens a session whose connection is a faultConn.
func connectFaulty(t *testing.T, servers []string, root string) (*Session, *faultConn) {
	var fc *faultConn
	s := connectWrapped(t, servers, root, testTimeout, func(conn zkConn, cfg Config) zkConn {
		fc = &faultConn{zkConn: conn}
		return fc
	})
	return s, fc
}

// connectWrapped opens a session (session timeout timeout) whose
// connection is what wrap makes of the real one, given the session's
// config: the tests' way to fault, hook or count a session's requests.
func connectWrapped(t *testing.T, servers []string, root string, timeout time.Duration, wrap func(zkConn, Config) zkConn) *Session {
	t.Helper()
	cfg, err := Config{Servers: servers, Root: root, SessionTimeout: timeout}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	contact := &contactClock{}
	hub := newWatchHub()
	conn, _, err := zk.Connect(servers, cfg.SessionTimeout, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}),
		zk.WithDialer(newDialer(nil, hostNames(servers), cfg.SessionTimeout, contact)),
		zk.WithEventCallback(hub.deliver))
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSession(ctxT(t), cfg, wrap(conn, cfg), contact, make(chan struct{}, 1), make(chan struct{}), hub)
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestCommitWithLostReplyIsSettledByReRead(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s, fc := connectFaulty(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	claim, err := s.Claims().Claim(ctx, "q", Owner{Member: "m"})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	for _, apply := range []bool{true, false} {
		before, _ := s.Claims().Offset(ctx, "q")
		fc.lose(1, apply)
		pos := before.Offset.Position + 10
		if err := claim.Commit(ctx, offsetAt(int64(pos), "m")); err != nil {
			t.Fatalf("commit with a lost reply (applied=%v): %v", apply, err)
		}
		after, err := s.Claims().Offset(ctx, "q")
		if err != nil || after.Offset.Position != pos || after.Version != before.Version+1 {
			t.Fatalf("applied=%v: want position %d at version %d, have %+v (%v)", apply, pos, before.Version+1, after, err)
		}
		if err := claim.Commit(ctx, offsetAt(int64(pos+1), "m")); err != nil {
			t.Fatalf("commit after a settled lost reply (applied=%v): %v", apply, err)
		}
	}
	// A lost reply on the release: settled the same way.
	fc.lose(1, true)
	if err := claim.Release(ctx, offsetAt(99, "m")); err != nil {
		t.Fatalf("release with a lost reply: %v", err)
	}
	if _, err := s.Claims().Owner(ctx, "q"); !errorsIsNotFound(err) {
		t.Fatalf("owner after release: want none, have %v", err)
	}
}

func TestNewSessionIDMeansLost(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s, fc := connectFaulty(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	claim, err := s.Claims().Claim(ctx, "q", Owner{Member: "m"})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	e, _ := s.Group().Election(ElectionRebalance)
	l, err := e.Campaign(ctx, "m")
	if err != nil {
		t.Fatalf("campaign: %v", err)
	}
	fc.sessionOff.Store(1) // the library silently moved to another session
	select {
	case <-s.Done():
	case <-time.After(time.Minute):
		t.Fatalf("a new session id was not reported as lost")
	}
	mustIs(t, s.Err(), drover.ErrSessionLost, "session Err")
	err = claim.Commit(ctx, offsetAt(1, "m"))
	mustIs(t, err, drover.ErrFenced, "commit after a new session id")
	mustIs(t, err, drover.ErrSessionLost, "commit after a new session id")
	<-l.Done()
	mustIs(t, l.Err(), drover.ErrNotLeader, "leadership after a new session id")
	if _, err := s.Queues().List(ctx); !errorsIs(err, drover.ErrSessionLost) {
		t.Fatalf("read after a new session id: want ErrSessionLost, have %v", err)
	}
}

// The clamp shortens handshake deadlines until the library clears the read
// deadline, then lets deadlines through.
func TestHandshakeClampConn(t *testing.T) {
	t.Parallel()
	rec := &deadlineConn{}
	c := &handshakeClampConn{Conn: rec, clamp: time.Second, contact: &contactClock{}}
	far := time.Now().Add(time.Hour)
	c.SetWriteDeadline(far)
	if d := time.Until(rec.write); d > time.Second {
		t.Fatalf("handshake write deadline: want ≤ 1s away, have %s", d)
	}
	c.SetWriteDeadline(time.Time{}) // not the end of the handshake
	c.SetReadDeadline(far)
	if d := time.Until(rec.read); d > time.Second {
		t.Fatalf("handshake read deadline: want ≤ 1s away, have %s", d)
	}
	c.SetReadDeadline(time.Time{}) // the handshake is over
	if !rec.read.IsZero() {
		t.Fatalf("zero read deadline: want passed through, have %s", rec.read)
	}
	c.SetReadDeadline(far)
	if !rec.read.Equal(far) {
		t.Fatalf("read deadline after the handshake: want %s, have %s", far, rec.read)
	}
}

// deadlineConn records deadlines.
type deadlineConn struct {
	fakeNetConn
	read, write time.Time
}

func (d *deadlineConn) SetReadDeadline(t time.Time) error  { d.read = t; return nil }
func (d *deadlineConn) SetWriteDeadline(t time.Time) error { d.write = t; return nil }
