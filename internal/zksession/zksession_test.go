package zksession_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/zksession"
)

// guard bounds every wait for an event; it is not a duration under test.
const guard = 30 * time.Second

// fakeClock is the backoff's clock, moved by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// proxied connects through a proxy to the shared ZooKeeper, in a private
// root, with a short session timeout so that a cut loses the session soon.
func proxied(t *testing.T) (*testenv.Proxy, func(context.Context) (*coordinator.Session, error)) {
	t.Helper()
	p := testenv.NewProxy(t, testenv.ZooKeeper(t).Addrs[0])
	cc := coordinator.Config{Servers: []string{p.Addr}, Root: testenv.Chroot(t), SessionTimeout: 2 * time.Second}
	return p, func(ctx context.Context) (*coordinator.Session, error) { return coordinator.Connect(ctx, cc) }
}

func waitDone(t *testing.T, s *coordinator.Session) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(guard):
		t.Fatalf("the session did not end within %s", guard)
	}
}

// A session lost (the proxy cut for longer than the session timeout) is
// replaced on the next use: a new session id, the old one closed, Renewed
// called with the new one; meanwhile a failed connect backs off, and the
// next use after the backoff connects.
func TestSessionReconnectsOnNextUseAfterLoss(t *testing.T) {
	p, connect := proxied(t)
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	var renewed atomic.Pointer[coordinator.Session]
	var connects atomic.Int32
	k, err := zksession.New(zksession.Config{
		Connect: func(ctx context.Context) (*coordinator.Session, error) {
			connects.Add(1)
			return connect(ctx)
		},
		MinBackoff: time.Second, MaxBackoff: 4 * time.Second, Now: clock.Now,
		Renewed: func(s *coordinator.Session) { renewed.Store(s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()

	s1, err := k.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := k.Session(ctx); err != nil || again != s1 {
		t.Fatalf("a second use of a live session: want the same session, have %p, %v (first %p)", again, err, s1)
	}
	if n := connects.Load(); n != 1 {
		t.Fatalf("connects for two uses of a live session: want 1, have %d", n)
	}
	if renewed.Load() != nil {
		t.Fatal("Renewed was called for the first session")
	}

	p.Cut()
	waitDone(t, s1)
	if k.Current() != s1 {
		t.Fatal("Current: want the lost session until the next use")
	}

	// While cut, the next use tries and fails; the one after it, before
	// the backoff has passed, does not try.
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
	if _, err := k.Session(cctx); err == nil {
		t.Fatal("a use while ZooKeeper is cut off: want an error, have a session")
	}
	ccancel()
	tried := connects.Load()
	if _, err := k.Session(ctx); !errors.Is(err, zksession.ErrBackingOff) {
		t.Fatalf("a use within the backoff: want ErrBackingOff, have %v", err)
	}
	if n := connects.Load(); n != tried {
		t.Fatalf("a use within the backoff connected: connects %d, want %d", n, tried)
	}

	p.Restore()
	clock.Add(time.Second)
	s2, err := k.Session(ctx)
	if err != nil {
		t.Fatalf("the first use after the backoff with ZooKeeper back: %v", err)
	}
	if s2 == s1 || s2.SessionID() == s1.SessionID() {
		t.Fatalf("want a new session, have the old one (id %#x)", s1.SessionID())
	}
	if renewed.Load() != s2 {
		t.Fatal("Renewed was not called with the new session")
	}
	if err := s1.Err(); !errors.Is(err, drover.ErrSessionLost) {
		t.Fatalf("the old session: want lost, have %v", err)
	}
	if _, err := s2.Queues().Names(ctx); err != nil {
		t.Fatalf("the new session does not answer: %v", err)
	}
}

// Keep renews a lost session without a caller asking: after the loss,
// Current becomes a new, live session.
func TestKeepRenewsALostSession(t *testing.T) {
	p, connect := proxied(t)
	renewed := make(chan *coordinator.Session, 1)
	k, err := zksession.New(zksession.Config{Connect: connect, MinBackoff: 10 * time.Millisecond,
		Renewed: func(s *coordinator.Session) { renewed <- s }})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	s1, err := k.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kept := make(chan error, 1)
	go func() { kept <- k.Keep(ctx) }()

	p.Cut()
	waitDone(t, s1)
	p.Restore()
	var s2 *coordinator.Session
	select {
	case s2 = <-renewed:
	case <-ctx.Done():
		t.Fatalf("no new session within %s of the loss", guard)
	}
	if k.Current() != s2 || s2.Err() != nil {
		t.Fatalf("Current: want the new live session %p, have %p (err %v)", s2, k.Current(), s2.Err())
	}
	cancel()
	if err := <-kept; err != nil {
		t.Fatalf("Keep after its context ended: want nil, have %v", err)
	}
}

// The backoff doubles with every failure up to MaxBackoff, and Close makes
// every later use fail with ErrSessionLost without connecting.
func TestBackoffDoublesToItsBoundAndCloseRefuses(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	down := errors.New("connection refused")
	var connects atomic.Int32
	k, err := zksession.New(zksession.Config{
		Connect:    func(context.Context) (*coordinator.Session, error) { connects.Add(1); return nil, down },
		MinBackoff: time.Second, MaxBackoff: 3 * time.Second, Now: clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
		if _, err := k.Session(ctx); !errors.Is(err, down) || errors.Is(err, zksession.ErrBackingOff) {
			t.Fatalf("try %d: want the connect error, have %v", i, err)
		}
		clock.Add(wait - time.Millisecond)
		if _, err := k.Session(ctx); !errors.Is(err, zksession.ErrBackingOff) || !errors.Is(err, down) {
			t.Fatalf("try %d, %s after it: want ErrBackingOff wrapping the connect error, have %v", i, wait-time.Millisecond, err)
		}
		clock.Add(time.Millisecond)
	}
	if n := connects.Load(); n != 4 {
		t.Fatalf("connects: want 4, have %d", n)
	}
	k.Close()
	if _, err := k.Session(ctx); !errors.Is(err, drover.ErrSessionLost) {
		t.Fatalf("after Close: want ErrSessionLost, have %v", err)
	}
	if n := connects.Load(); n != 4 {
		t.Fatalf("a use after Close connected (%d connects)", n)
	}
}

func TestNewRequiresConnect(t *testing.T) {
	if _, err := zksession.New(zksession.Config{}); !errors.Is(err, drover.ErrInvalidConfig) {
		t.Fatalf("want ErrInvalidConfig, have %v", err)
	}
}

// Next waits for a session other than the one given: the first one Keep
// connects once ZooKeeper is reachable (the proxy cut before any connect),
// then the renewed one after a loss; Close ends a waiting Next.
func TestNextFollowsEverySessionFromTheFirst(t *testing.T) {
	p, connect := proxied(t)
	k, err := zksession.New(zksession.Config{Connect: connect, MinBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	p.Cut()
	kept := make(chan error, 1)
	go func() { kept <- k.Keep(ctx) }()
	first := make(chan *coordinator.Session, 1)
	go func() {
		s, err := k.Next(ctx, nil)
		if err != nil {
			t.Errorf("Next(nil): %v", err)
		}
		first <- s
	}()
	p.Restore()
	s1 := <-first
	if s1 == nil || s1.Err() != nil || k.Current() != s1 {
		t.Fatalf("Next(nil): want the first live session, have %p (Current %p)", s1, k.Current())
	}
	p.Cut()
	waitDone(t, s1)
	p.Restore()
	s2, err := k.Next(ctx, s1)
	if err != nil || s2 == s1 || s2 == nil {
		t.Fatalf("Next(first): want the renewed session, have %p %v", s2, err)
	}
	ended := make(chan error, 1)
	go func() { _, err := k.Next(ctx, s2); ended <- err }()
	k.Close()
	if err := <-ended; !errors.Is(err, drover.ErrSessionLost) {
		t.Fatalf("Next during Close: want ErrSessionLost, have %v", err)
	}
	cancel()
	<-kept
}
