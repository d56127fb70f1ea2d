package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/rebalance"
)

// fakeLeadership is a term of a fakeElector.
type fakeLeadership struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	lost   <-chan struct{} // the session's end, which ends the term
}

func newFakeLeadership(lost <-chan struct{}) *fakeLeadership {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &fakeLeadership{ctx: ctx, cancel: cancel, lost: lost}
}

func (l *fakeLeadership) Done() <-chan struct{} { return l.ctx.Done() }
func (l *fakeLeadership) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}
func (l *fakeLeadership) Act(ctx context.Context) (context.Context, context.CancelFunc, error) {
	select {
	case <-l.lost: // no acting on a lost session: the term is ending
		<-l.ctx.Done()
	default:
	}
	if err := l.Err(); err != nil {
		return nil, nil, err
	}
	actx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(l.ctx, cancel)
	return actx, func() { stop(); cancel() }, nil
}
func (l *fakeLeadership) Resign(context.Context) error {
	l.cancel(fmt.Errorf("resigned: %w", drover.ErrNotLeader))
	return nil
}

// fakeElector wins every campaign after failing the first fails of them,
// while its session lives; a leadership ends with the session.
type fakeElector struct {
	s *fakeSession
	// gate, when set, holds every campaign until it receives a token (the
	// election is another candidate's until then).
	gate      chan struct{}
	mu        sync.Mutex
	fails     int
	campaigns int
	terms     []*fakeLeadership
}

func (e *fakeElector) Campaign(ctx context.Context, _ string) (Leadership, error) {
	if e.gate != nil {
		select {
		case <-e.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-e.s.lost:
			return nil, e.s.Err()
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.campaigns++
	if err := e.s.Err(); err != nil {
		return nil, err
	}
	if e.fails > 0 {
		e.fails--
		return nil, errors.New("election: candidate node vanished")
	}
	l := newFakeLeadership(e.s.lost)
	go func() {
		select {
		case <-e.s.lost:
			l.cancel(fmt.Errorf("session lost: %w", drover.ErrNotLeader))
		case <-l.ctx.Done():
		}
	}()
	e.terms = append(e.terms, l)
	return l, nil
}

func (e *fakeElector) term(i int) *fakeLeadership {
	e.mu.Lock()
	defer e.mu.Unlock()
	if i >= len(e.terms) {
		return nil
	}
	return e.terms[i]
}

// fakeLeaderSession feeds members and queues and records assignments.
type fakeLeaderSession struct {
	*fakeSession
	members chan []coordinator.MemberNode
	queues  chan coordinator.Registry

	mu      sync.Mutex
	current drover.Assignment
	written []drover.Assignment
	fenced  bool // the next write is refused as fenced
	// hold, when set, holds the next Write: it says so on entered and
	// returns once hold is closed (a leader busy in a slow write).
	hold, entered chan struct{}
	// direct: WatchMembers is members itself, with no goroutine between,
	// so that an update sent is ready for the leader at once.
	direct bool
	// clock, when set, times each write (writtenAt[i] is written[i]'s).
	clock     *testkit.Clock
	writtenAt []time.Time
	appends   int // how many of written came from Update placing queues
	removes   int // how many of written came from Update removing queues
	moves     int // how many of written came from Move
	movedQs   int // queues those Moves handed to another member
}

func newFakeLeaderSession() *fakeLeaderSession {
	return &fakeLeaderSession{fakeSession: newFakeSession(),
		members: make(chan []coordinator.MemberNode, 16), queues: make(chan coordinator.Registry, 16)}
}

func (s *fakeLeaderSession) NewAssignmentWriter(context.Context, Leadership) (AssignmentWriter, error) {
	return &fakeWriter{s: s}, nil
}
func (s *fakeLeaderSession) WatchMembers(ctx context.Context) <-chan []coordinator.MemberNode {
	if s.direct {
		return s.members
	}
	return relay(ctx, s.members)
}
func (s *fakeLeaderSession) WatchRegistry(ctx context.Context) <-chan coordinator.Registry {
	return relay(ctx, s.queues)
}

func relay[T any](ctx context.Context, in chan T) <-chan T {
	out := make(chan T)
	go func() {
		defer close(out)
		for {
			select {
			case v := <-in:
				select {
				case out <- v:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// recordLocked notes next as written, and when (clock, if set); s.mu is
// held.
func (s *fakeLeaderSession) recordLocked(next drover.Assignment) {
	s.written = append(s.written, next)
	if s.clock != nil {
		s.writtenAt = append(s.writtenAt, s.clock.Now())
	}
}

func (s *fakeLeaderSession) writes() []drover.Assignment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]drover.Assignment(nil), s.written...)
}

type fakeWriter struct{ s *fakeLeaderSession }

func (w *fakeWriter) Epoch() int32 { return 1 }
func (w *fakeWriter) Current() drover.Assignment {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.current
}
func (w *fakeWriter) Write(_ context.Context, next drover.Assignment) (drover.Assignment, error) {
	w.s.mu.Lock()
	hold, entered := w.s.hold, w.s.entered
	w.s.hold = nil
	w.s.mu.Unlock()
	if hold != nil {
		entered <- struct{}{}
		<-hold
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.fenced {
		w.s.fenced = false
		return drover.Assignment{}, fmt.Errorf("write: %w", drover.ErrFenced)
	}
	next.Generation = w.s.current.Generation + 1
	w.s.current = next
	w.s.recordLocked(next)
	return next, nil
}

func (w *fakeWriter) Update(_ context.Context, placed map[string]string, removed []string) (drover.Assignment, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	next := w.s.current
	next.Queues = maps.Clone(next.Queues)
	for q, m := range placed {
		if _, ok := next.Queues[q]; ok {
			return drover.Assignment{}, fmt.Errorf("update: %s is assigned already", q)
		}
		next.Queues[q] = m
	}
	gone := 0
	for _, q := range removed {
		if _, ok := next.Queues[q]; ok {
			delete(next.Queues, q)
			gone++
		}
	}
	if len(placed) == 0 && gone == 0 {
		return w.s.current, nil
	}
	next.Generation++
	w.s.current = next
	w.s.recordLocked(next)
	if len(placed) > 0 {
		w.s.appends++
	}
	if gone > 0 {
		w.s.removes++
	}
	return next, nil
}

// Move is coordinator.AssignmentWriter.Move's: the leader's write of a
// change of members.
func (w *fakeWriter) Move(_ context.Context, moved map[string]string) (drover.Assignment, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.fenced {
		w.s.fenced = false
		return drover.Assignment{}, fmt.Errorf("move: %w", drover.ErrFenced)
	}
	next := w.s.current
	next.Queues = maps.Clone(next.Queues)
	n := 0
	for q, m := range moved {
		from, ok := next.Queues[q]
		if !ok {
			return drover.Assignment{}, fmt.Errorf("move: %s is not assigned", q)
		}
		if from != m {
			n++
		}
		next.Queues[q] = m
	}
	if n == 0 {
		return w.s.current, nil
	}
	next.Generation++
	w.s.current = next
	w.s.recordLocked(next)
	w.s.moves++
	w.s.movedQs += n
	return next, nil
}

func members(names ...string) []coordinator.MemberNode {
	out := make([]coordinator.MemberNode, len(names))
	for i, n := range names {
		out[i] = coordinator.MemberNode{ID: n, Member: drover.Member{Name: n, Capacity: 1}}
	}
	return out
}

func queues(names ...string) coordinator.Registry {
	out := make([]coordinator.RegisteredQueue, len(names))
	for i, n := range names {
		out[i] = coordinator.RegisteredQueue{Name: n}
	}
	return coordinator.NewRegistry(out...)
}

// leaderRun is one rebalancer on fakes.
type leaderRun struct {
	s       *fakeLeaderSession
	el      *fakeElector
	leading chan bool
	done    chan error
	cancel  context.CancelFunc
}

func startLeader(t *testing.T, campaignFails int) *leaderRun {
	t.Helper()
	return startLeaderGrace(t, campaignFails, time.Millisecond)
}

// startLeaderGrace is startLeader with RedisGrace grace.
func startLeaderGrace(t *testing.T, campaignFails int, grace time.Duration) *leaderRun {
	t.Helper()
	s := newFakeLeaderSession()
	lr := &leaderRun{s: s, el: &fakeElector{s: s.fakeSession, fails: campaignFails}, leading: make(chan bool, 16), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	lr.cancel = cancel
	go func() {
		lr.done <- RunRebalancer(ctx, RebalancerConfig{
			Session: lr.s, Elector: lr.el, Candidate: "me", Settle: time.Millisecond, CampaignRetry: time.Millisecond, RedisGrace: grace,
			OnLeading: func(b bool) { lr.leading <- b }, Logger: testkit.Logger(t, hclog.Warn),
		})
	}()
	t.Cleanup(func() { cancel(); <-lr.done })
	return lr
}

// written waits for the n-th assignment written and returns it.
func (lr *leaderRun) written(t *testing.T, n int) drover.Assignment {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("assignment %d written", n), func() bool { return len(lr.s.writes()) >= n })
	return lr.s.writes()[n-1]
}

func TestRebalanceLeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, lr *leaderRun)
	}{
		{"the first target assigns every queue to a live member", func(t *testing.T, lr *leaderRun) {
			lr.s.members <- members("a", "b")
			lr.s.queues <- queues("q1", "q2", "q3", "q4")
			a := lr.written(t, 1)
			if len(a.Queues) != 4 || a.Leader != "me" || a.Strategy != "sticky" {
				t.Fatalf("want 4 queues, leader me, strategy sticky; have %+v", a)
			}
			for q, m := range a.Queues {
				if m != "a" && m != "b" {
					t.Fatalf("%s assigned to %q, which is no member", q, m)
				}
			}
		}},
		{"nothing is written before both lists are known", func(t *testing.T, lr *leaderRun) {
			lr.s.members <- members("a")
			lr.s.members <- members("a", "b") // still no queue list
			lr.s.queues <- queues("q1")
			a := lr.written(t, 1)
			if len(lr.s.writes()) != 1 || len(a.Queues) != 1 {
				t.Fatalf("want one write with the one queue, have %v", lr.s.writes())
			}
		}},
		{"a join moves queues; an unchanged target writes nothing", func(t *testing.T, lr *leaderRun) {
			lr.s.members <- members("a")
			lr.s.queues <- queues("q1", "q2")
			first := lr.written(t, 1)
			lr.s.members <- members("a", "b")
			second := lr.written(t, 2)
			if maps.Equal(first.Queues, second.Queues) || second.Generation != first.Generation+1 {
				t.Fatalf("a join must move a queue in the next generation: %+v then %+v", first, second)
			}
			lr.s.members <- members("b", "a") // the same members
			lr.s.queues <- queues("q2", "q1") // and queues
			lr.s.queues <- queues("q1", "q2", "q3")
			third := lr.written(t, 3)
			if _, ok := third.Queues["q3"]; !ok {
				t.Fatalf("an unchanged target must not be written: want the third write to add q3, have %+v", third)
			}
		}},
		{"the registry's weights and tags reach the strategy", func(t *testing.T, lr *leaderRun) {
			ms := members("a", "b")
			ms[1].Member.Tags = []string{"gpu"}
			lr.s.members <- ms
			lr.s.queues <- coordinator.NewRegistry(
				coordinator.RegisteredQueue{Name: "render", Tags: []string{"gpu"}},
				coordinator.RegisteredQueue{Name: "heavy", Weight: 10},
				coordinator.RegisteredQueue{Name: "l1"}, coordinator.RegisteredQueue{Name: "l2"})
			a := lr.written(t, 1)
			if a.Queues["render"] != "b" {
				t.Fatalf("render requires gpu: want it on b, have %+v", a.Queues)
			}
			// heavy outweighs every other queue: its owner gets nothing else.
			for q, m := range a.Queues {
				if q != "heavy" && m == a.Queues["heavy"] {
					t.Fatalf("heavy (weight 10) shares %s with %s: %+v", m, q, a.Queues)
				}
			}
		}},
		{"corrupt members and a restarted member's old session are skipped", func(t *testing.T, lr *leaderRun) {
			ms := members("a", "a")
			ms = append(ms, coordinator.MemberNode{ID: "bad", Err: errors.New("corrupt")})
			lr.s.members <- ms
			lr.s.queues <- queues("q1", "q2")
			for q, m := range lr.written(t, 1).Queues {
				if m != "a" {
					t.Fatalf("%s assigned to %q: want only a", q, m)
				}
			}
		}},
		{"a fenced write ends the term and the candidate campaigns again", func(t *testing.T, lr *leaderRun) {
			lr.s.mu.Lock()
			lr.s.fenced = true
			lr.s.mu.Unlock()
			lr.s.members <- members("a")
			lr.s.queues <- queues("q1")
			for _, want := range []bool{true, false, true} {
				if have := <-lr.leading; have != want {
					t.Fatalf("leading: want %v, have %v", want, have)
				}
			}
			lr.s.members <- members("a")
			lr.s.queues <- queues("q1")
			if a := lr.written(t, 1); a.Queues["q1"] != "a" {
				t.Fatalf("the second term must write the target, have %+v", a)
			}
			if lr.el.term(0).Err() == nil {
				t.Fatal("the first term must be resigned")
			}
		}},
		{"a lost session ends the rebalancer", func(t *testing.T, lr *leaderRun) {
			<-lr.leading
			lr.s.lose()
			if err := <-lr.done; !errors.Is(err, drover.ErrSessionLost) {
				t.Fatalf("want an error wrapping ErrSessionLost, have %v", err)
			}
			lr.done <- nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, startLeader(t, 0)) })
	}
}

// Defect (issue 13): a failed campaign ended the scheduler's candidacy
// while the rebalancer retried it: one rule now serves both.
func TestACampaignErrorIsRetriedByBothLeaders(t *testing.T) {
	t.Run("rebalancer", func(t *testing.T) {
		lr := startLeader(t, 3)
		if !<-lr.leading {
			t.Fatal("want a leadership term")
		}
		lr.el.mu.Lock()
		n := lr.el.campaigns
		lr.el.mu.Unlock()
		if n != 4 {
			t.Fatalf("want 3 failed campaigns and a won one, have %d campaigns", n)
		}
	})
	t.Run("scheduler", func(t *testing.T) {
		s := newFakeSession()
		el := &fakeElector{s: s, fails: 3}
		lead := &SchedulerLeadership{Candidacy: &Candidacy{Elector: el, Candidate: "me", Session: s, Retry: time.Millisecond}}
		term, err := lead.Lead(testkit.Context(t))
		if err != nil {
			t.Fatalf("want a term after failed campaigns, have %v", err)
		}
		if term.Err() != nil {
			t.Fatalf("want a live term, have %v", term.Err())
		}
		el.term(0).Resign(context.Background()) // deposed: Lead campaigns again
		if _, err := lead.Lead(testkit.Context(t)); err != nil {
			t.Fatalf("want a second term, have %v", err)
		}
		if el.term(1) == nil {
			t.Fatal("want a second campaign after the first term ended")
		}
		s.lose()
		if _, err := lead.Lead(testkit.Context(t)); !errors.Is(err, drover.ErrSessionLost) {
			t.Fatalf("a lost session ends the candidacy: want ErrSessionLost, have %v", err)
		}
	})
}

// Issue 32: the settle window and the Redis grace run on the injected
// clock. The settle is a minute and the grace a thousand hours, so only the
// fake clock's advance can let the leader write at all, and cut off b.
// runOnClock runs a rebalancer on s with clock, a settle window of a
// minute and grace; stop ends it and waits (once: the test's cleanup calls
// it too).
func runOnClock(t *testing.T, s *fakeLeaderSession, clock *testkit.Clock, grace time.Duration) (stop func()) {
	return runOnClockOwn(t, s, clock, grace, nil)
}

// runOnClockOwn is runOnClock with own as the leader's own Redis
// (RebalancerConfig.OwnRedis).
func runOnClockOwn(t *testing.T, s *fakeLeaderSession, clock *testkit.Clock, grace time.Duration, own OwnRedis) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunRebalancer(ctx, RebalancerConfig{
			Session: s, Elector: &fakeElector{s: s.fakeSession}, Candidate: "me", Settle: time.Minute, RedisGrace: grace,
			OwnRedis: own, Clock: clock, Logger: testkit.Logger(t, hclog.Warn),
		})
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func TestSettleAndGraceRunOnTheInjectedClock(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const grace = 1000 * time.Hour
	s := newFakeLeaderSession()
	runOnClock(t, s, clock, grace)

	ms := members("a", "b")
	ms[1].Member.RedisUnreachable = true
	s.members <- ms
	s.queues <- queues("q1", "q2")
	testkit.Eventually(t, "the first target written once the settle window passed on the clock", func() bool {
		clock.Advance(time.Minute)
		return len(s.writes()) == 1
	})
	if a := s.writes()[0]; a.Queues["q1"] == a.Queues["q2"] {
		t.Fatalf("within the grace b still counts: want q1 and q2 on a and b, have %v", a.Queues)
	}
	clock.Advance(grace)
	testkit.Eventually(t, "b cut off once the grace passed on the clock", func() bool { return len(s.writes()) == 2 })
	if a := s.writes()[1]; a.Queues["q1"] != "a" || a.Queues["q2"] != "a" {
		t.Fatalf("past the grace b gets nothing: want both queues on a, have %v", a.Queues)
	}
}

// TestALeaderSharingAnOutageWaitsForEvidence: a member's flag that has
// stood for the grace is not acted on while the leader's own Redis has
// answered nothing since: the outage may be the leader's too, and the
// other members may not have noticed yet (a CI chaos run's redis-cut-all
// moved 13 of 45 queues when one member noticed more than a grace before
// the others). The first answer of the leader's Redis is the evidence.
// Fails on the parent, which cut b off at the grace.
func TestALeaderSharingAnOutageWaitsForEvidence(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const grace = time.Hour
	s := newFakeLeaderSession()
	own := newFakeRedisState()
	runOnClockOwn(t, s, clock, grace, own)
	s.members <- members("a", "b")
	s.queues <- queues("q1", "q2")
	testkit.Eventually(t, "the first target written once the settle window passed", func() bool {
		clock.Advance(time.Minute)
		return len(s.writes()) == 1
	})
	armed := clock.Timers()
	s.members <- cutOff(members("a", "b"), "b")
	testkit.Eventually(t, "b's flag read (the settle timer armed for it)", func() bool { return clock.Timers() > armed })
	// The settle window, then the grace, pass: at each, the leader
	// decides and, holding, arms its timer again.
	for _, d := range []time.Duration{time.Minute, grace} {
		clock.Advance(d)
		testkit.Eventually(t, "the leader decided and armed its timer again (or wrote)", func() bool {
			return len(s.writes()) > 1 || clock.Timers() > armed
		})
	}
	if w := s.writes(); len(w) != 1 {
		t.Fatalf("the leader's Redis answered nothing since b's flag: want the assignment to stand, have writes %v", w)
	}
	own.answer() // the leader's Redis answers: Redis is up, b is cut off alone
	testkit.Eventually(t, "b cut off at the next decision", func() bool {
		clock.Advance(grace)
		return len(s.writes()) == 2
	})
	if a := s.writes()[1]; a.Queues["q1"] != "a" || a.Queues["q2"] != "a" {
		t.Fatalf("want both queues on a, have %v", a.Queues)
	}
}

// A leader whose own Redis has gone quiet (unanswered for two ping
// intervals, not yet for the member's give-up) moves nothing: an outage of
// every member looks so to a leader elected in it. A chaos run's leader,
// elected 0.4 s before its own give-up, moved 2 of 45 queues while no
// worker reached Redis. On the parent the second write comes at once.
func TestALeaderWhoseRedisIsQuietMovesNothing(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := newFakeLeaderSession()
	own := newFakeRedisState()
	runOnClockOwn(t, s, clock, time.Hour, own)
	s.members <- members("a", "b")
	s.queues <- queues("q1", "q2", "q3", "q4")
	testkit.Eventually(t, "the first target written once the settle window passed", func() bool {
		clock.Advance(time.Minute)
		return len(s.writes()) == 1
	})
	own.setQuiet(true)
	armed := clock.Timers()
	s.members <- members("a", "b", "c") // a join: ordinarily queues move to c
	testkit.Eventually(t, "the join read (the settle timer armed for it)", func() bool { return clock.Timers() > armed })
	for range 3 {
		clock.Advance(time.Minute)
		testkit.Eventually(t, "the leader looked and armed its timer again", func() bool { return clock.Timers() > armed })
	}
	if w := s.writes(); len(w) != 1 {
		t.Fatalf("the leader's Redis is quiet: want the assignment to stand, have writes %v", w)
	}
	own.setQuiet(false)
	testkit.Eventually(t, "c gets queues once Redis answers", func() bool {
		clock.Advance(time.Minute)
		return len(s.writes()) == 2
	})
	if a := s.writes()[1]; !slicesContains(maps.Values(a.Queues), "c") {
		t.Fatalf("want c to own a queue, have %v", a.Queues)
	}
}

// fakeRedisState is a member's view of its Redis (OwnRedis) that the test
// sets.
type fakeRedisState struct {
	mu          sync.Mutex
	unreachable bool
	quiet       bool // Quiet's answer
	changed     chan struct{}
	reads       int    // State calls
	answers     uint64 // pings answered
}

func (f *fakeRedisState) Answers() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answers
}

func (f *fakeRedisState) Quiet() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.quiet || f.unreachable
}

func (f *fakeRedisState) setQuiet(q bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.quiet = q
}

// answer counts one more ping answered.
func (f *fakeRedisState) answer() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers++
}

func newFakeRedisState() *fakeRedisState { return &fakeRedisState{changed: make(chan struct{})} }

func (f *fakeRedisState) State() (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.unreachable, f.changed
}

func (f *fakeRedisState) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func (f *fakeRedisState) set(unreachable bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unreachable = unreachable
	close(f.changed)
	f.changed = make(chan struct{})
}

// runWithOwnRedis runs a rebalancer on s and el whose own Redis is own,
// until the test ends, and returns its OnLeading calls.
func runWithOwnRedis(t *testing.T, s *fakeLeaderSession, el *fakeElector, own OwnRedis) <-chan bool {
	leading := make(chan bool, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunRebalancer(ctx, RebalancerConfig{
			Session: s, Elector: el, Candidate: "me", Settle: time.Millisecond, OwnRedis: own,
			OnLeading: func(b bool) { leading <- b }, Logger: testkit.Logger(t, hclog.Warn),
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return leading
}

// TestALeaderThatCannotReachRedisResigns: a leader whose own Redis stops
// answering ends its term and resigns, so that a member that reaches Redis
// leads (it could not tell idle queues from busy ones, retire keys, or
// know whether a flag was its own outage too); it does not campaign while
// its Redis is silent, and does once it answers.
func TestALeaderThatCannotReachRedisResigns(t *testing.T) {
	s := newFakeLeaderSession()
	el := &fakeElector{s: s.fakeSession}
	redis := newFakeRedisState()
	leading := runWithOwnRedis(t, s, el, redis)
	if !<-leading {
		t.Fatal("want the first term to start")
	}
	redis.set(true)
	if <-leading {
		t.Fatal("want the term to end when Redis stops answering")
	}
	el.mu.Lock()
	term := el.terms[0]
	el.mu.Unlock()
	<-term.Done() // the loop announces the end (OnLeading) before it resigns
	el.mu.Lock()
	campaigns, resigned := el.campaigns, term.Err()
	el.mu.Unlock()
	if !errors.Is(resigned, drover.ErrNotLeader) {
		t.Fatalf("want the term resigned, have %v", resigned)
	}
	if campaigns != 1 {
		t.Fatalf("want no campaign while Redis is silent, have %d campaigns", campaigns)
	}
	redis.set(false)
	if !<-leading {
		t.Fatal("want a new term once Redis answers again")
	}
	el.mu.Lock()
	defer el.mu.Unlock()
	if el.campaigns != 2 {
		t.Fatalf("want a second campaign once Redis answers, have %d", el.campaigns)
	}
}

// TestACampaignWonWhileRedisIsSilentIsHandedOn: a member whose Redis went
// silent while it waited in the election hands the term on as it wins,
// without leading (in an outage every member notices in turn, each would
// otherwise start a term, reading the assignment and the registry, only
// to end it).
func TestACampaignWonWhileRedisIsSilentIsHandedOn(t *testing.T) {
	s := newFakeLeaderSession()
	el := &fakeElector{s: s.fakeSession, gate: make(chan struct{})}
	redis := newFakeRedisState()
	leading := runWithOwnRedis(t, s, el, redis)
	// Redis answered when the candidate checked; it now waits in the
	// election (the gate), and Redis goes silent before it wins.
	testkit.Eventually(t, "the candidate checked its Redis before campaigning", func() bool { return redis.readCount() > 0 })
	redis.set(true)
	el.gate <- struct{}{}
	testkit.Eventually(t, "the won term resigned", func() bool {
		el.mu.Lock()
		defer el.mu.Unlock()
		return len(el.terms) == 1 && el.terms[0].Err() != nil
	})
	select {
	case b := <-leading:
		t.Fatalf("want no term led while Redis is silent, have OnLeading(%v)", b)
	default:
	}
}

// TestFlagsThatCameWhileBusyCountBeforeActing: a member's Redis flag
// that reached the leader while it was busy (here in a slow write) is read
// before the leader acts on the flags it had settled. Otherwise, with both
// the settle timer and the member update ready, the leader may act first
// and hand every queue to the member that has just flagged itself too: in
// a chaos run every worker lost Redis, and 39 of 56 queues moved to the one
// whose flag the leader had not read yet. Each round is such a race, won
// by the wrong side half of the time on the parent.
func TestFlagsThatCameWhileBusyCountBeforeActing(t *testing.T) {
	for round := 0; round < 16; round++ {
		flagsWhileBusy(t, round)
	}
}

// heldInFirstWrite starts a rebalancer on clock (RedisGrace grace) whose
// members are a and b, b flagged (its flag arms the settle timer for its
// grace), and whose queues are qs, and returns once the leader is inside
// its first assignment's write, held there until hold is closed. Member
// updates sent on s.members are ready for the leader at once (direct).
func heldInFirstWrite(t *testing.T, s *fakeLeaderSession, clock *testkit.Clock, grace time.Duration, qs ...string) (hold chan struct{}, stop func()) {
	hold = make(chan struct{})
	s.hold, s.entered, s.direct = hold, make(chan struct{}, 1), true
	stop = runOnClock(t, s, clock, grace)
	ms := members("a", "b")
	ms[1].Member.RedisUnreachable = true
	s.members <- ms
	s.queues <- queues(qs...)
	testkit.Eventually(t, "the first target's write entered", func() bool {
		clock.Advance(time.Minute)
		select {
		case <-s.entered:
			return true
		default:
			return false
		}
	})
	return hold, stop
}

func flagsWhileBusy(t *testing.T, round int) {
	clock := testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const grace = time.Hour
	s := newFakeLeaderSession()
	hold, stop := heldInFirstWrite(t, s, clock, grace, "q1", "q2")
	// While the leader writes, a flags itself too, and the grace of b's
	// flag passes.
	both := members("a", "b")
	both[0].Member.RedisUnreachable, both[1].Member.RedisUnreachable = true, true
	s.members <- both // ready for the leader (direct)
	clock.Advance(grace)
	close(hold)
	testkit.Eventually(t, "the first target written", func() bool { return len(s.writes()) >= 1 })
	first := s.writes()[0]
	// The leader acts again once the flags settle: with every member cut
	// off, the assignment stands.
	for i := 0; i < 3; i++ {
		clock.Advance(grace)
	}
	stop()
	for i, a := range s.writes()[1:] {
		if !maps.Equal(a.Queues, first.Queues) {
			t.Fatalf("round %d: want the assignment to stand while a and b are both cut off (%v), have write %d: %v", round, first.Queues, i+2, a.Queues)
		}
	}
}

// A member that joins while the leader is busy waits out the settle
// window, whichever of the settle timer and the member update the leader
// takes first. The timer drains the member updates waiting (issue 29's
// fix, above); acting on a drained join at once skipped the window that
// gathers the members of a rolling start into one move. 16 rounds: the
// order select picks is random.
func TestAJoinTakenAtTheSettleTimerWaitsItsWindow(t *testing.T) {
	for round := 0; round < 16; round++ {
		joinWhileBusy(t, round)
	}
}

func joinWhileBusy(t *testing.T, round int) {
	clock := testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const grace, settle = time.Hour, time.Minute // settle: runOnClock's
	s := newFakeLeaderSession()
	s.clock = clock
	hold, stop := heldInFirstWrite(t, s, clock, grace, "q1", "q2", "q3", "q4")
	defer stop()
	// While the leader writes, c joins and the settle timer comes due.
	ms := members("a", "b", "c")
	ms[1].Member.RedisUnreachable = true
	s.members <- ms
	clock.Advance(grace)
	joined := clock.Now()
	close(hold)
	testkit.Eventually(t, "c assigned queues", func() bool {
		s.mu.Lock()
		n := len(s.written)
		has := n > 0 && slices.Contains(slices.Collect(maps.Values(s.written[n-1].Queues)), "c")
		s.mu.Unlock()
		if !has && len(s.members) == 0 {
			clock.Advance(time.Second)
		}
		return has
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, a := range s.written {
		if slices.Contains(slices.Collect(maps.Values(a.Queues)), "c") {
			if at := s.writtenAt[i]; at.Sub(joined) < settle {
				t.Fatalf("round %d: c was given queues %v after it joined, want the settle window (%v) first", round, at.Sub(joined), settle)
			}
			return
		}
	}
}

// TestLeaderPlacesNewQueuesWithoutRecomputing: queues only added to the
// registry are placed beside the assignment and appended (their cost grows
// with the new queues), where they are as balanced as a whole computation
// would make them; a member that joins, or a queue removed, goes through
// the whole computation again. Fails on the leader that recomputed and
// rewrote the whole assignment for every new queue.
func TestLeaderPlacesNewQueuesWithoutRecomputing(t *testing.T) {
	lr := startLeader(t, 0)
	lr.s.members <- members("a", "b")
	lr.s.queues <- queues("q1", "q2", "q3", "q4")
	first := lr.written(t, 1)
	lr.s.queues <- queues("q1", "q2", "q3", "q4", "q5", "q6")
	second := lr.written(t, 2)
	lr.s.mu.Lock()
	appends := lr.s.appends
	lr.s.mu.Unlock()
	if appends != 1 {
		t.Fatalf("two queues added: want them appended, have %d appends of %d writes", appends, len(lr.s.writes()))
	}
	for q, m := range first.Queues {
		if second.Queues[q] != m {
			t.Fatalf("placing new queues moved %s from %s to %s", q, m, second.Queues[q])
		}
	}
	per := map[string]int{}
	for _, m := range second.Queues {
		per[m]++
	}
	if len(second.Queues) != 6 || per["a"] != 3 || per["b"] != 3 {
		t.Fatalf("want 6 queues, 3 a member; have %v", second.Queues)
	}
	// A member joins: a whole computation, which moves queues to it.
	lr.s.members <- members("a", "b", "c")
	third := lr.written(t, 3)
	if n := len(rebalanceMoves(second.Queues, third.Queues)); n != 2 {
		t.Fatalf("a third member: want 2 queues moved to it, have %v", third.Queues)
	}
	// A queue removed and one added: no whole computation (issue 40),
	// nothing moved. The placement is written at once; the removal waits
	// for the removals' write (removalsEvery on the clock: fleet/removals.go).
	lr.s.queues <- queues("q2", "q3", "q4", "q5", "q6", "q7")
	fourth := lr.written(t, 4)
	lr.s.mu.Lock()
	appends, removes := lr.s.appends, lr.s.removes
	lr.s.mu.Unlock()
	if appends != 2 || removes != 0 || len(fourth.Queues) != 7 || fourth.Queues["q7"] == "" || fourth.Queues["q1"] == "" {
		t.Fatalf("a queue removed and one added: want an Update placing q7, q1 still held, have %d appends, %d removes, %v", appends, removes, fourth.Queues)
	}
	fifth := lr.written(t, 5)
	lr.s.mu.Lock()
	appends, removes = lr.s.appends, lr.s.removes
	lr.s.mu.Unlock()
	if appends != 2 || removes != 1 || len(fifth.Queues) != 6 || fifth.Queues["q1"] != "" {
		t.Fatalf("the removals' write: want one Update without q1, have %d appends, %d removes, %v", appends, removes, fifth.Queues)
	}
	if moved := rebalanceMoves(third.Queues, fifth.Queues); len(moved) != 0 {
		t.Fatalf("a removal moved %v", moved)
	}
}

func rebalanceMoves(from, to map[string]string) []string {
	var out []string
	for q, m := range to {
		if from[q] != "" && from[q] != m {
			out = append(out, q)
		}
	}
	return out
}

// A change of members is written as the queues that move, with no whole
// computation (issue 43: at 100 × 1,000,000 a join's computation and whole
// write took seconds of the leader's CPU to move one queue in a hundred):
// a join, a leave and a crash each cost the leader one Move of exactly the
// queues Sticky's whole computation would move, and the strategy is run
// once, for the first target.
func TestAChangeOfMembersMovesWithoutRecomputing(t *testing.T) {
	s := newFakeLeaderSession()
	strategy := &countingStrategy{Strategy: rebalance.Sticky{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunRebalancer(ctx, RebalancerConfig{Session: s, Elector: &fakeElector{s: s.fakeSession}, Candidate: "me",
			Strategy: strategy, Settle: time.Millisecond, Logger: testkit.Logger(t, hclog.Warn)})
	}()
	defer func() { cancel(); <-done }()
	lr := &leaderRun{s: s}
	names := make([]string, 4000)
	for i := range names {
		names[i] = fmt.Sprintf("queue-%05d", i)
	}
	reg := queues(names...)
	s.members <- members("a", "b", "c", "d")
	s.queues <- reg
	prev := lr.written(t, 1)
	for i, change := range [][]coordinator.MemberNode{
		members("a", "b", "c", "d", "e"), // a join
		members("b", "c", "d", "e"),      // a leave (or a crash: the same to the leader)
		members("b", "c", "d", "e", "f", "g"),
	} {
		s.members <- change
		next := lr.written(t, 2+i)
		var live []rebalance.Member
		for _, m := range change {
			live = append(live, rebalance.FromMember(m.Member))
		}
		want, err := rebalance.Sticky{}.Assign(rebalance.Input{Previous: prev.Queues, Members: live, Source: registryQueues{reg}})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(next.Queues, want.Queues) {
			t.Fatalf("change %d: the leader's assignment differs from Sticky's whole computation", i)
		}
		s.mu.Lock()
		moves, movedQs := s.moves, s.movedQs
		s.mu.Unlock()
		if calls := strategy.calls.Load(); calls != 1 || moves != i+1 {
			t.Fatalf("change %d of members: want no whole computation (1 in all, the first target) and a Move each, have %d computations and %d moves", i, calls, moves)
		}
		if i == 0 && movedQs != 800 {
			t.Fatalf("a fifth member: want the 800 queues of its share moved, have %d", movedQs)
		}
		prev = next
	}
}
