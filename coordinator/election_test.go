package coordinator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// Five candidates, each leading once: never two leaders at once, and every
// candidate leads exactly once.
func TestElectionNeverTwoLeaders(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	ctx := ctxT(t)
	var active, maxActive atomic.Int32
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for i := range 5 {
		s := connect(t, server.Addrs, root)
		e, err := s.Group().Election(ElectionScheduler)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("c%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := e.Campaign(ctx, name)
			if err != nil {
				errs <- fmt.Errorf("campaign %s: %w", name, err)
				return
			}
			n := active.Add(1)
			for {
				m := maxActive.Load()
				if n <= m || maxActive.CompareAndSwap(m, n) {
					break
				}
			}
			if err := l.Check(ctx); err != nil {
				errs <- fmt.Errorf("%s leads but Check says %w", name, err)
			}
			info, err := e.Leader(ctx)
			if err != nil || info.Name != name {
				errs <- fmt.Errorf("Leader while %s leads: have %+v (%v)", name, info, err)
			}
			mu.Lock()
			order = append(order, name)
			waiting := 5 - len(order) // candidates that have not led yet
			mu.Unlock()
			// Hold the leadership until every candidate that has not led
			// yet has its node in the election: each of them could wrongly
			// take over now.
			if err := awaitCandidates(ctx, e, waiting+1); err != nil {
				errs <- fmt.Errorf("%s: wait for the other candidates: %w", name, err)
			}
			active.Add(-1)
			if err := l.Resign(ctx); err != nil {
				errs <- fmt.Errorf("resign %s: %w", name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := maxActive.Load(); m != 1 {
		t.Fatalf("leaders at once: want at most 1, have %d", m)
	}
	if len(order) != 5 {
		t.Fatalf("terms: want 5 (each candidate once), have %v", order)
	}
}

// The leader's session ends: the next candidate leads, and the old leader's
// Leadership is over.
func TestElectionFailoverOnSessionEnd(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	ctx := ctxT(t)
	a, b := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ea, _ := a.Group().Election(ElectionRebalance)
	eb, _ := b.Group().Election(ElectionRebalance)
	la, err := ea.Campaign(ctx, "a")
	if err != nil {
		t.Fatalf("campaign a: %v", err)
	}
	won := make(chan *Leadership, 1)
	go func() {
		l, err := eb.Campaign(ctx, "b")
		if err != nil {
			t.Errorf("campaign b: %v", err)
		}
		won <- l
	}()
	if err := awaitCandidates(ctx, eb, 2); err != nil {
		t.Fatalf("wait for b's candidate node: %v", err)
	}
	select {
	case <-won:
		t.Fatalf("b leads while a leads")
	default:
	}
	a.Close()
	lb := <-won
	if lb == nil {
		t.FailNow()
	}
	<-la.Done()
	mustIs(t, la.Err(), drover.ErrNotLeader, "a's leadership after its session closed")
	if err := lb.Check(ctx); err != nil {
		t.Fatalf("b leads but Check says %v", err)
	}
}

// A leader cut off past its session timeout loses the leadership before the
// server expires it; when its client comes back under a new session id it
// never believes it still leads, and the other candidate leads.
func TestElectionLeaderBackUnderNewSessionDoesNotLead(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	proxy := testenv.NewProxy(t, server.Addr)
	root := testenv.Chroot(t)
	ctx := ctxT(t)
	a, b := connect(t, []string{proxy.Addr}, root), connect(t, server.Addrs, root)
	ea, _ := a.Group().Election(ElectionScheduler)
	eb, _ := b.Group().Election(ElectionScheduler)
	la, err := ea.Campaign(ctx, "a")
	if err != nil {
		t.Fatalf("campaign a: %v", err)
	}
	act, cancelAct, err := la.Act(ctx)
	if err != nil {
		t.Fatalf("act: %v", err)
	}
	defer cancelAct()
	won := make(chan *Leadership, 1)
	go func() {
		l, err := eb.Campaign(ctx, "b")
		if err != nil {
			t.Errorf("campaign b: %v", err)
		}
		won <- l
	}()
	id := a.SessionID()

	proxy.Cut()
	<-act.Done() // suspended: stop acting at once
	<-la.Done()  // lost: the leadership is over
	lb := <-won  // the server expired a's session: b leads
	if lb == nil {
		t.FailNow()
	}
	proxy.Restore()
	testkit.Eventually(t, "a's client to reconnect under a new session", func() bool {
		return a.conn.SessionID() != id && a.conn.State() == zk.StateHasSession
	})
	mustIs(t, la.Err(), drover.ErrNotLeader, "a's leadership under a new session")
	mustIs(t, la.Check(ctx), drover.ErrNotLeader, "a's Check under a new session")
	if _, _, err := la.Act(ctx); !errorsIs(err, drover.ErrNotLeader) {
		t.Fatalf("a's Act under a new session: want ErrNotLeader, have %v", err)
	}
	info, err := eb.Leader(ctx)
	if err != nil || info.Name != "b" || info.Session != b.SessionID() {
		t.Fatalf("leader: want b, have %+v (%v)", info, err)
	}
	if err := lb.Check(ctx); err != nil {
		t.Fatalf("b's Check: %v", err)
	}
}

// A short suspension cancels the leader's acting context; once the same
// session is back, the leader may act again without a new election.
func TestElectionActPausesWhileSuspended(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	proxy := testenv.NewProxy(t, server.Addr)
	a := connect(t, []string{proxy.Addr}, testenv.Chroot(t), func(c *Config) { c.SessionTimeout = 10 * time.Second })
	ctx := ctxT(t)
	e, _ := a.Group().Election(ElectionScheduler)
	l, err := e.Campaign(ctx, "a")
	if err != nil {
		t.Fatalf("campaign: %v", err)
	}
	act, cancel, err := l.Act(ctx)
	if err != nil {
		t.Fatalf("act: %v", err)
	}
	defer cancel()
	proxy.Cut()
	<-act.Done()
	if !l.Suspended() {
		t.Fatalf("Suspended: want true while cut off")
	}
	again := make(chan error, 1)
	go func() {
		actx, cancel, err := l.Act(ctx)
		if err == nil {
			defer cancel()
			if actx.Err() != nil {
				err = fmt.Errorf("acting context already done: %w", actx.Err())
			}
		}
		again <- err
	}()
	proxy.Restore()
	if err := <-again; err != nil {
		t.Fatalf("act after the same session is back: %v", err)
	}
	if err := l.Check(ctx); err != nil {
		t.Fatalf("still the leader after a short cut: %v", err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, err := e.Campaign(cctx, "x"); err == nil {
		t.Fatalf("campaign with a cancelled context: want an error")
	}
}

// awaitCandidates waits, on a children watch, until e holds n candidate
// nodes.
func awaitCandidates(ctx context.Context, e *Election, n int) error {
	for {
		names, _, ch, err := e.s.conn.ChildrenW(e.dir)
		if err != nil {
			return err
		}
		if len(names) == n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("have %d candidates, want %d: %w", len(names), n, ctx.Err())
		}
	}
}

// A candidacy a session left behind (a Resign whose delete failed while the
// session was suspended keeps the node for as long as the session lives)
// makes neither the session's next campaign nor any other candidate wait
// for it: the chaos run that found it had no rebalance leader for 3.5
// minutes, so no new key of a family was registered. The other candidate
// may queue before or after the session's new node: both lead in turn.
func TestElectionCampaignRemovesItsOwnStaleCandidacy(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	ctx, cancel := context.WithTimeout(ctxT(t), time.Minute) // a bound on a hang, not a timing
	defer cancel()
	s, other := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	e, err := s.Group().Election(ElectionScheduler)
	if err != nil {
		t.Fatal(err)
	}
	oe, err := other.Group().Election(ElectionScheduler)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := e.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// The stale term is never resigned: as if its delete had failed.
	type led struct {
		name string
		l    *Leadership
		err  error
	}
	leads := make(chan led, 2)
	var leading atomic.Int32
	run := func(e *Election, name string) {
		l, err := e.Campaign(ctx, name)
		if err == nil {
			if n := leading.Add(1); n > 1 {
				err = fmt.Errorf("%s leads beside another leader", name)
			}
			leading.Add(-1)
			if rerr := l.Resign(ctx); err == nil {
				err = rerr
			}
		}
		leads <- led{name, l, err}
	}
	go run(oe, "other")
	go run(e, "again")
	for range 2 {
		r := <-leads
		if r.err != nil {
			t.Fatalf("%s: %v", r.name, r.err)
		}
		if r.name == "again" && r.l.Node() == stale.Node() {
			t.Fatalf("want a new candidate node, have the stale one %s", stale.Node())
		}
	}
	<-stale.Done() // its node was removed: the old term knows it ended
}
