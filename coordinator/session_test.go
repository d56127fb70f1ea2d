package coordinator

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// stateLog records a session's state changes in order, and when each was
// made (the callback runs in the session's monitor, as it changes state).
type stateLog struct {
	mu     sync.Mutex
	states []SessionState
	at     []time.Time
}

func (l *stateLog) record(st SessionState) {
	l.mu.Lock()
	l.states = append(l.states, st)
	l.at = append(l.at, time.Now())
	l.mu.Unlock()
}

// when returns the time of the first change to st, zero if none.
func (l *stateLog) when(st SessionState) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.states {
		if s == st {
			return l.at[i]
		}
	}
	return time.Time{}
}
func (l *stateLog) get() []SessionState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]SessionState(nil), l.states...)
}

// goneAt returns a channel receiving the time node is deleted, as seen by s.
func goneAt(t *testing.T, s *Session, node string) <-chan time.Time {
	t.Helper()
	out := make(chan time.Time, 1)
	ctx := ctxT(t)
	exists, _, ch, err := s.conn.ExistsW(node)
	if err != nil || !exists {
		t.Fatalf("watch %s: exists=%v err=%v", node, exists, err)
	}
	go func() {
		for {
			select {
			case ev := <-ch:
				if ev.Type == zk.EventNodeDeleted {
					out <- time.Now()
					return
				}
			case <-ctx.Done():
				return
			}
			var exists bool
			exists, _, ch, err = s.conn.ExistsW(node)
			if err == nil && !exists {
				out <- time.Now()
				return
			}
		}
	}()
	return out
}

func TestSessionShortCutSuspendsAndResumesSameSession(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	proxy := testenv.NewProxy(t, server.Addr)
	var states stateLog
	// 10 s: a reconnect takes about a second (the library waits 1 s before
	// retrying its only server), well inside 2/3 of the timeout.
	a := connect(t, []string{proxy.Addr}, testenv.Chroot(t), func(c *Config) {
		c.SessionTimeout = 10 * time.Second
		c.OnStateChange = states.record
	})
	ctx := ctxT(t)
	claim, err := a.Claims().Claim(ctx, "q", Owner{Member: "a"})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	id := a.SessionID()

	proxy.Cut()
	waitState(t, a, Suspended, time.Minute)
	proxy.Restore()
	waitState(t, a, Connected, time.Minute)

	if got := a.conn.SessionID(); got != id {
		t.Fatalf("session id after a short cut: want %#x, have %#x", id, got)
	}
	select {
	case <-a.Done():
		t.Fatalf("Done closed after a short cut: %v", a.Err())
	default:
	}
	if err := claim.Commit(ctx, offsetAt(7, "a")); err != nil {
		t.Fatalf("commit after a short cut: %v", err)
	}
	if got := states.get(); len(got) < 2 || got[0] != Suspended || got[len(got)-1] != Connected {
		t.Fatalf("state changes: want suspended … connected, have %v", got)
	}
}

func TestSessionLongCutIsLostBeforeTheServerExpiresIt(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	proxy := testenv.NewProxy(t, server.Addr)
	root := testenv.Chroot(t)
	var states stateLog
	a := connect(t, []string{proxy.Addr}, root, func(c *Config) { c.OnStateChange = states.record })
	observer := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	m, err := a.Group().Join(ctx, drover.Member{Name: "a"})
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	expired := goneAt(t, observer, m.Path())
	id := a.SessionID()

	proxy.Cut()
	<-a.Done()
	// When the session reported the loss, not when this goroutine woke up
	// after it: on a loaded machine that can be later than the expiry
	// (about 1.3 s after the loss with the 4 s timeout), seen by another
	// goroutine. Done closes just before the callback records it.
	var lostAt time.Time
	testkit.Eventually(t, "the loss recorded by OnStateChange", func() bool {
		lostAt = states.when(Lost)
		return !lostAt.IsZero()
	})
	mustIs(t, a.Err(), drover.ErrSessionLost, "Err after a long cut")
	expiredAt := <-expired
	if !lostAt.Before(expiredAt) {
		t.Fatalf("lost reported at %s, after the server expired the session at %s", lostAt, expiredAt)
	}
	if got := states.get(); len(got) != 2 || got[0] != Suspended || got[1] != Lost {
		t.Fatalf("state changes: want [suspended lost], have %v", got)
	}

	// The library comes back under a new session: never continued silently.
	proxy.Restore()
	testkit.Eventually(t, "the library to open a new session", func() bool {
		return a.conn.SessionID() != id && a.conn.State() == zk.StateHasSession
	})
	if a.State() != Lost || a.SessionID() != id {
		t.Fatalf("after a new session id: want lost with id %#x, have %s with %#x", id, a.State(), a.SessionID())
	}
	_, err = a.Group().Join(ctx, drover.Member{Name: "a"})
	mustIs(t, err, drover.ErrSessionLost, "join on a lost session")
}

// The zombie: A's session expires while it is cut off, B claims and commits,
// A's client comes back under a new session and tries to commit and release.
func TestZombieOwnerIsFenced(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	proxy := testenv.NewProxy(t, server.Addr)
	root := testenv.Chroot(t)
	a := connect(t, []string{proxy.Addr}, root)
	b := connect(t, server.Addrs, root)
	ctx := ctxT(t)

	ca, err := a.Claims().Claim(ctx, "q", Owner{Member: "a", Generation: 1})
	if err != nil {
		t.Fatalf("claim by a: %v", err)
	}
	if err := ca.Commit(ctx, offsetAt(10, "a")); err != nil {
		t.Fatalf("commit by a: %v", err)
	}
	idA := a.SessionID()

	proxy.Cut()
	if err := b.Claims().WaitReleased(ctx, "q"); err != nil { // a's session expires
		t.Fatalf("wait for a's owner node to expire: %v", err)
	}
	cb, err := b.Claims().Claim(ctx, "q", Owner{Member: "b", Generation: 2})
	if err != nil {
		t.Fatalf("claim by b: %v", err)
	}
	if err := cb.Commit(ctx, offsetAt(100, "b")); err != nil {
		t.Fatalf("commit by b: %v", err)
	}
	before, err := b.Claims().Offset(ctx, "q")
	if err != nil {
		t.Fatalf("read offset: %v", err)
	}

	proxy.Restore()
	testkit.Eventually(t, "a's client to reconnect under a new session", func() bool {
		return a.conn.SessionID() != idA && a.conn.State() == zk.StateHasSession
	})

	// Through the API: refused.
	mustIs(t, ca.Commit(ctx, offsetAt(11, "a")), drover.ErrFenced, "zombie commit")
	mustIs(t, ca.Release(ctx, offsetAt(12, "a")), drover.ErrFenced, "zombie release")
	// On the wire, under the new session (as a request queued while cut off
	// would be sent): ZooKeeper refuses both too.
	data, _ := json.Marshal(offsetAt(13, "a"))
	for _, release := range []bool{false, true} {
		_, err := a.conn.Multi(ca.ops(data, release)...)
		if !isVersionConflict(err) {
			t.Fatalf("zombie multi (release=%v) under a new session: want a version conflict, have %v", release, err)
		}
	}

	after, err := b.Claims().Offset(ctx, "q")
	if err != nil || after != before {
		t.Fatalf("b's offset: want %+v untouched, have %+v (%v)", before, after, err)
	}
	owner, err := b.Claims().Owner(ctx, "q")
	if err != nil || owner.Session != b.SessionID() || owner.Owner.Member != "b" {
		t.Fatalf("owner: want b (session %#x), have %+v (%v)", b.SessionID(), owner, err)
	}
	if err := cb.Commit(ctx, offsetAt(101, "b")); err != nil {
		t.Fatalf("b commits after the zombie: %v", err)
	}
}
