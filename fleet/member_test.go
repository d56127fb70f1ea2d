package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/worker"
)

// A Member's life on fakes: the sessions come from an injected Connect, so
// join, leave, loss and rejoin, and leader changes run without a server.

// eventLog records, in order, what a member did to its fakes.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf(format, args...))
}

func (l *eventLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// fakeMemberSession is a fakeLeaderSession that a member can join, with its
// elections and pause flags.
type fakeMemberSession struct {
	*fakeLeaderSession
	id       int64
	onState  func(coordinator.SessionState)
	log      *eventLog
	electors map[string]*fakeElector
	pauses   chan coordinator.PauseSet

	memMu  sync.Mutex
	joined []*fakeMembership
	closed bool
	heard  time.Time // LastHeard: set by the test (hear)
	paused []string  // Pauses().Set calls: "scope/name"
}

// fakeSessionTimeout is every fakeMemberSession's SessionTimeout.
const fakeSessionTimeout = 10 * time.Second

func (s *fakeMemberSession) LastHeard() time.Time {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	return s.heard
}
func (s *fakeMemberSession) SessionTimeout() time.Duration { return fakeSessionTimeout }

// hear makes at the session's LastHeard.
func (s *fakeMemberSession) hear(at time.Time) { s.memMu.Lock(); s.heard = at; s.memMu.Unlock() }

// fakePauses is a fakeMemberSession's pause flags.
type fakePauses struct{ *fakeMemberSession }

func (s fakePauses) Set(_ context.Context, scope drover.PauseScope, name string, _ drover.Pause) error {
	if err := s.Err(); err != nil {
		return err
	}
	s.memMu.Lock()
	defer s.memMu.Unlock()
	s.paused = append(s.paused, fmt.Sprintf("%s/%s", scope, name))
	return nil
}

func (s *fakeMemberSession) pauseWrites() []string {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	return slices.Clone(s.paused)
}

var _ MemberSession = (*fakeMemberSession)(nil)

// The ports the member hands on: the fake implements the group's and the
// consumers' itself.
func (s *fakeMemberSession) Group() Group                  { return s }
func (s *fakeMemberSession) Pauses() PauseFlags            { return fakePauses{s} }
func (s *fakeMemberSession) Reconciler() ReconcilerSession { return s }
func (s *fakeMemberSession) Leader() LeaderSession         { return s }

func (s *fakeMemberSession) Join(_ context.Context, info drover.Member) (Membership, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	s.memMu.Lock()
	defer s.memMu.Unlock()
	mb := &fakeMembership{path: fmt.Sprintf("/members/m-%d-%d", s.id, len(s.joined)), info: info, log: s.log}
	s.joined = append(s.joined, mb)
	s.log.add("join %d", s.id)
	return mb, nil
}

// membership returns the member node joined on s, nil before the join.
func (s *fakeMemberSession) membership() *fakeMembership {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	if len(s.joined) == 0 {
		return nil
	}
	return s.joined[len(s.joined)-1]
}

func (s *fakeMemberSession) Elector(name string) (Elector, error) {
	el := s.electors[name]
	if el == nil {
		return nil, fmt.Errorf("fake: no election %q", name)
	}
	return el, nil
}

func (s fakePauses) Watch(ctx context.Context) <-chan coordinator.PauseSet {
	return relay(ctx, s.pauses)
}

func (s *fakeMemberSession) State() coordinator.SessionState {
	if s.Err() != nil {
		return coordinator.Lost
	}
	return coordinator.Connected
}

func (s *fakeMemberSession) Confirm(context.Context) error { return s.Err() }

func (s *fakeMemberSession) SessionID() int64 { return s.id }

func (s *fakeMemberSession) Close() error {
	s.memMu.Lock()
	s.closed = true
	s.memMu.Unlock()
	s.lose()
	s.log.add("close %d", s.id)
	return nil
}

// expire ends the session as the server does: Lost is reported, then Done
// closes.
func (s *fakeMemberSession) expire() {
	s.onState(coordinator.Lost)
	s.lose()
}

// fakeMembership is a member node of a fakeMemberSession.
type fakeMembership struct {
	path string
	log  *eventLog
	mu   sync.Mutex
	info drover.Member
	left bool
}

func (m *fakeMembership) Path() string { return m.path }
func (m *fakeMembership) Update(_ context.Context, info drover.Member) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.info = info
	return nil
}
func (m *fakeMembership) Leave(context.Context) error {
	m.mu.Lock()
	m.left = true
	m.mu.Unlock()
	m.log.add("leave %s", m.path)
	return nil
}

func (m *fakeMembership) hasLeft() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.left }

// fakeConnector is a Member's Connect: the first fails connects fail, then
// each makes a new fakeMemberSession, sent on made.
type fakeConnector struct {
	log   *eventLog
	gated bool // the sessions' rebalance elections hold campaigns on a gate
	made  chan *fakeMemberSession

	mu       sync.Mutex
	fails    int
	attempts int
	sessions int64
}

func newFakeConnector() *fakeConnector {
	return &fakeConnector{log: &eventLog{}, made: make(chan *fakeMemberSession, 16)}
}

func (c *fakeConnector) connect(_ context.Context, cfg coordinator.Config) (MemberSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempts++
	if c.fails > 0 {
		c.fails--
		return nil, errors.New("fake: connection refused")
	}
	c.sessions++
	ls := newFakeLeaderSession()
	s := &fakeMemberSession{fakeLeaderSession: ls, id: c.sessions, onState: cfg.OnStateChange, log: c.log,
		pauses: make(chan coordinator.PauseSet, 4)}
	rebalance := &fakeElector{s: ls.fakeSession}
	if c.gated {
		rebalance.gate = make(chan struct{}, 4)
	}
	s.electors = map[string]*fakeElector{coordinator.ElectionRebalance: rebalance, coordinator.ElectionScheduler: {s: ls.fakeSession}}
	cfg.OnStateChange(coordinator.Connected)
	c.made <- s
	return s, nil
}

func (c *fakeConnector) attemptCount() int { c.mu.Lock(); defer c.mu.Unlock(); return c.attempts }

// fakeWorker is a fakeRunner with the rest of a member's Worker.
type fakeWorker struct {
	*fakeRunner
	log *eventLog

	mu        sync.Mutex
	suspended []bool // every SetSuspended, in order
	abortAlls int
	pause     worker.PauseState
}

func (w *fakeWorker) StopQueues(ctx context.Context, qs []string, kind drover.StopKind, stopped func(string, error)) {
	for _, q := range qs {
		if w.fakeRunner.runs(q) { // not the cut of a planned stop
			w.log.add("stop %s", q)
		}
	}
	w.fakeRunner.StopQueues(ctx, qs, kind, stopped)
}
func (w *fakeWorker) SetPause(p worker.PauseState) { w.mu.Lock(); w.pause = p; w.mu.Unlock() }
func (w *fakeWorker) SetSuspended(b bool) {
	w.mu.Lock()
	w.suspended = append(w.suspended, b)
	w.mu.Unlock()
}
func (w *fakeWorker) AbortAll() {
	w.mu.Lock()
	w.abortAlls++
	w.mu.Unlock()
	w.fakeRunner.mu.Lock()
	clear(w.fakeRunner.running)
	w.fakeRunner.mu.Unlock()
	w.log.add("abort all")
}
func (w *fakeWorker) Run(ctx context.Context) error {
	w.log.add("guard start")
	<-ctx.Done()
	w.log.add("guard end")
	return nil
}

func (w *fakeWorker) state() (suspended []bool, abortAlls int, pause worker.PauseState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.suspended), w.abortAlls, w.pause
}

// memberRun is one Member on a fakeConnector.
type memberRun struct {
	m      *Member
	c      *fakeConnector
	w      *fakeWorker
	cur    *Current
	cancel context.CancelFunc
	done   chan error
}

func startMember(t *testing.T, c *fakeConnector) *memberRun {
	t.Helper()
	w := &fakeWorker{fakeRunner: newFakeRunner(), log: c.log}
	cur := &Current{} // built first, as the process does: the worker's view of the session
	m, err := NewMember(MemberConfig{
		Name: "m1", Member: drover.Member{Capacity: 4}, Worker: w, Connect: c.connect, Current: cur,
		Settle: time.Millisecond, ReconnectMin: time.Millisecond, ReconnectMax: 2 * time.Millisecond,
		Logger: testkit.Logger(t, hclog.Warn),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mr := &memberRun{m: m, c: c, w: w, cur: cur, cancel: cancel, done: make(chan error, 1)}
	go func() { mr.done <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-mr.done })
	return mr
}

// session waits for the member's next session and for its join.
func (mr *memberRun) session(t *testing.T) *fakeMemberSession {
	t.Helper()
	var s *fakeMemberSession
	select {
	case s = <-mr.c.made:
	case <-time.After(testkit.Bound): // a guard, not a timing
		t.Fatal("no session was opened")
	}
	testkit.Eventually(t, "member joined", func() bool { return s.membership() != nil && mr.m.Ready() == nil })
	return s
}

// runs waits until the worker runs exactly queues.
func (mr *memberRun) runs(t *testing.T, queues ...string) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("worker runs %v", queues), func() bool { return slices.Equal(mr.w.owned(), queues) })
}

func TestMemberLife(t *testing.T) {
	for _, tc := range []struct {
		name string
		prep func(c *fakeConnector)
		run  func(t *testing.T, mr *memberRun)
	}{
		{"join: the member node describes the member and assigned queues run", nil, func(t *testing.T, mr *memberRun) {
			s := mr.session(t)
			mb := s.membership()
			if mb.info.Name != "m1" || mb.info.Capacity != 4 || mb.info.StartedAt.IsZero() {
				t.Fatalf("want member node of m1, capacity 4, a start time; have %+v", mb.info)
			}
			if have := mr.m.Info()["member_node"]; have != mb.path {
				t.Fatalf("Info: want member_node %s, have %v", mb.path, have)
			}
			s.assign(1, map[string]string{"q1": "m1", "q2": "other"})
			mr.runs(t, "q1")
			if s.owner("q1") == nil || s.owner("q2") != nil {
				t.Fatal("want an owner node for q1 only")
			}
			testkit.Eventually(t, "leading the rebalance", mr.m.Leading)
		}},
		{"graceful leave: leave the membership, then drain and release, then stop the guard", nil, func(t *testing.T, mr *memberRun) {
			s := mr.session(t)
			s.assign(1, map[string]string{"q1": "m1"})
			mr.runs(t, "q1")
			testkit.Eventually(t, "leading the rebalance", mr.m.Leading)
			mr.cancel()
			if err := <-mr.done; err != nil {
				t.Fatalf("Run after a graceful leave: want nil, have %v", err)
			}
			mr.done <- nil
			events := mr.c.log.all()
			leave, stop, guardEnd := slices.Index(events, "leave "+s.membership().path), slices.Index(events, "stop q1"), slices.Index(events, "guard end")
			if leave < 0 || stop < leave || guardEnd < stop {
				t.Fatalf("want leave, then stop q1, then the guard's end; have %v", events)
			}
			if s.owner("q1") != nil {
				t.Fatal("q1's owner node must be released")
			}
			if s.electors[coordinator.ElectionRebalance].term(0).Err() == nil {
				t.Fatal("the rebalance leadership must be resigned")
			}
			if mr.m.Leading() || mr.m.Ready() == nil || mr.m.Session() != nil {
				t.Fatal("after leaving: want not leading, not ready, no session")
			}
		}},
		{"session loss: every queue aborted, nothing written, a new member joins and claims again", nil, func(t *testing.T, mr *memberRun) {
			s1 := mr.session(t)
			s1.assign(1, map[string]string{"q1": "m1"})
			mr.runs(t, "q1")
			s1.expire()
			s2 := mr.session(t)
			if p1, p2 := s1.membership().path, s2.membership().path; p1 == p2 {
				t.Fatalf("the new session must join as a new member node, have %s twice", p2)
			}
			suspended, abortAlls, _ := mr.w.state()
			if abortAlls != 1 {
				t.Fatalf("want AbortAll once after the loss, have %d", abortAlls)
			}
			// Lost suspends task starts until every queue is aborted; the
			// new session's Connected and the rejoin resume them.
			if lost := slices.Index(suspended, true); lost < 0 || suspended[len(suspended)-1] {
				t.Fatalf("want suspended on the loss and resumed after it, have %v", suspended)
			}
			if n := mr.w.count(mr.w.stops, "q1"); n != 0 {
				t.Fatalf("a lost session stops nothing gracefully (no write): want 0 stops of q1, have %d", n)
			}
			mr.runs(t)
			s2.assign(1, map[string]string{"q1": "m1"})
			mr.runs(t, "q1")
			if s2.owner("q1") == nil {
				t.Fatal("q1 must be claimed on the new session")
			}
		}},
		{"connection failures are retried until a session opens", func(c *fakeConnector) { c.fails = 3 }, func(t *testing.T, mr *memberRun) {
			mr.session(t)
			if n := mr.c.attemptCount(); n != 4 {
				t.Fatalf("want 3 failed attempts and a good one, have %d attempts", n)
			}
		}},
		{"leader change: deposed, the member campaigns again and leads a new term", func(c *fakeConnector) { c.gated = true }, func(t *testing.T, mr *memberRun) {
			s := mr.session(t)
			el := s.electors[coordinator.ElectionRebalance]
			if mr.m.Leading() {
				t.Fatal("want not leading while another candidate holds the election")
			}
			el.gate <- struct{}{}
			testkit.Eventually(t, "leading", mr.m.Leading)
			el.term(0).cancel(fmt.Errorf("deposed: %w", drover.ErrNotLeader))
			testkit.Eventually(t, "not leading after the term ended", func() bool { return !mr.m.Leading() })
			el.gate <- struct{}{}
			testkit.Eventually(t, "leading a second term", func() bool { return mr.m.Leading() && el.term(1) != nil })
			s.members <- members("m1")
			s.queues <- queues("q1")
			testkit.Eventually(t, "the new term writes the assignment", func() bool { return len(s.writes()) == 1 })
			if a := s.writes()[0]; a.Leader != "m1" || a.Queues["q1"] != "m1" {
				t.Fatalf("want q1 on m1 written by m1, have %+v", a)
			}
		}},
		{"pause flags that concern the member reach the worker", nil, func(t *testing.T, mr *memberRun) {
			s := mr.session(t)
			s.pauses <- coordinator.PauseSet{Queues: map[string]drover.Pause{"q1": {}}, Members: map[string]drover.Pause{"m2": {}}}
			testkit.Eventually(t, "pause delivered", func() bool { _, _, p := mr.w.state(); return p.Queues["q1"] })
			if _, _, p := mr.w.state(); p.Member || p.All {
				t.Fatalf("only q1 is paused for m1, have %+v", p)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeConnector()
			if tc.prep != nil {
				tc.prep(c)
			}
			tc.run(t, startMember(t, c))
		})
	}
}
