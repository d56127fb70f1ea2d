package fleet

import (
	"context"
	"errors"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/rebalance"
)

// cutOff marks the named members of ms as unable to reach Redis.
func cutOff(ms []coordinator.MemberNode, names ...string) []coordinator.MemberNode {
	for i := range ms {
		for _, n := range names {
			if ms[i].Member.Name == n {
				ms[i].Member.RedisUnreachable = true
			}
		}
	}
	return ms
}

// TestLeaderGivesNoQueuesToAMemberCutOffFromRedis: a member that publishes
// redis_unreachable loses its queues to the members that can reach Redis,
// and gets them back when it can again. Fails on the old leader, which
// balanced over every member.
func TestLeaderGivesNoQueuesToAMemberCutOffFromRedis(t *testing.T) {
	lr := startLeader(t, 0)
	lr.s.members <- members("a", "b", "c")
	lr.s.queues <- queues("q1", "q2", "q3", "q4", "q5", "q6")
	first := lr.written(t, 1)
	if !slicesContains(maps.Values(first.Queues), "b") {
		t.Fatalf("want b to own a queue at first, have %v", first.Queues)
	}
	lr.s.members <- cutOff(members("a", "b", "c"), "b")
	second := lr.written(t, 2)
	if len(second.Queues) != 6 {
		t.Fatalf("every queue must stay assigned: %v", second.Queues)
	}
	for q, m := range second.Queues {
		if m == "b" {
			t.Fatalf("%s stays on b, which cannot reach Redis: %v", q, second.Queues)
		}
	}
	lr.s.members <- members("a", "b", "c") // b reaches Redis again
	third := lr.written(t, 3)
	if !slicesContains(maps.Values(third.Queues), "b") {
		t.Fatalf("b reaches Redis again: want it to own a queue, have %v", third.Queues)
	}
}

// TestLeaderMovesNothingWhenNoMemberReachesRedis: when every member is cut
// off from Redis (Redis itself is down) the previous assignment stands,
// even though the registry changed. Fails on the old leader, which wrote a
// new target with the new queue.
func TestLeaderMovesNothingWhenNoMemberReachesRedis(t *testing.T) {
	s := newFakeLeaderSession()
	prev := map[string]string{"q1": "a", "q2": "b"}
	s.current = drover.Assignment{Generation: 7, Strategy: rebalance.StickyName, Queues: prev}
	lead := newFakeLeadership(s.lost)
	cfg := RebalancerConfig{Strategy: rebalance.Sticky{}, Candidate: "me"}
	log := testkit.Logger(t, hclog.Warn)
	all := cutOff(members("a", "b", "c"), "a", "b", "c")
	live, out := liveMembers(all, names("a", "b", "c"))
	if err := writeTarget(context.Background(), lead, &fakeWriter{s: s}, cfg, live, out, queues("q1", "q2", "q3"), &placement{}, log); err != nil {
		t.Fatal(err)
	}
	if w := s.writes(); len(w) != 0 {
		t.Fatalf("no member reaches Redis: want the assignment to stand, have writes %+v", w)
	}
	// One member reaching Redis again is enough for the leader to act.
	some := cutOff(members("a", "b", "c"), "a", "b")
	live, out = liveMembers(some, names("a", "b"))
	if err := writeTarget(context.Background(), lead, &fakeWriter{s: s}, cfg, live, out, queues("q1", "q2", "q3"), &placement{}, log); err != nil {
		t.Fatal(err)
	}
	w := s.writes()
	if len(w) != 1 || !maps.Equal(w[0].Queues, map[string]string{"q1": "c", "q2": "c", "q3": "c"}) {
		t.Fatalf("want every queue on c, the one member reaching Redis; have %+v", w)
	}
}

// TestLeaderWaitsRedisGraceBeforeMovingQueues: a member's redis_unreachable
// is acted on only once it has stood for RedisGrace, so that the members
// noticing one Redis outage first do not hand their queues to those about
// to notice. The write the registry change causes (a fence) still gives b
// queues. Fails without the grace.
func TestLeaderWaitsRedisGraceBeforeMovingQueues(t *testing.T) {
	lr := startLeaderGrace(t, 0, time.Hour)
	lr.s.members <- members("a", "b")
	lr.s.queues <- queues("q1", "q2", "q3", "q4")
	lr.written(t, 1)
	lr.s.members <- cutOff(members("a", "b"), "b")
	lr.s.queues <- queues("q1", "q2", "q3", "q4", "q5", "q6")
	second := lr.written(t, 2)
	if len(second.Queues) != 6 || !slicesContains(maps.Values(second.Queues), "b") {
		t.Fatalf("b is unreachable for less than the grace: want it to keep queues, have %v", second.Queues)
	}
}

func names(ns ...string) map[string]bool {
	out := map[string]bool{}
	for _, n := range ns {
		out[n] = true
	}
	return out
}

func slicesContains(seq func(func(string) bool), v string) bool {
	for x := range seq {
		if x == v {
			return true
		}
	}
	return false
}

// TestRedisHealthTransitions: one ping per interval on the injected clock;
// unreachable once no ping was answered for GiveUpAfter (not one interval
// sooner), reachable again at the first answer; each transition closes the
// change channel. No sleeps: the test waits for the prober to arm its timer.
func TestRedisHealthTransitions(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_000_000, 0))
	var down atomic.Bool
	var pings atomic.Int64
	h, err := NewRedisHealth(RedisHealthConfig{
		Ping: func(context.Context) error {
			pings.Add(1)
			if down.Load() {
				return errors.New("i/o timeout")
			}
			return nil
		},
		GiveUpAfter: 10 * time.Second, Interval: 2 * time.Second, Clock: clk, Logger: testkit.Logger(t, hclog.Warn),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	var n int64
	// tick waits for the prober to finish its ping and arm its timer, checks
	// that it pinged exactly once more, then moves the clock one interval.
	tick := func() {
		t.Helper()
		testkit.Eventually(t, "the prober arms its timer", func() bool { return clk.Timers() == 1 })
		if n++; pings.Load() != n {
			t.Fatalf("want %d pings (one per interval), have %d", n, pings.Load())
		}
	}
	tick()
	bad, changed := h.State()
	if bad || h.Ready() != nil {
		t.Fatal("Redis answers: want reachable and ready")
	}
	if a := h.Answers(); a != 1 {
		t.Fatalf("one ping answered: want Answers 1 (the leader's evidence), have %d", a)
	}
	if h.Quiet() {
		t.Fatal("Redis answered the last ping: want it not quiet")
	}
	down.Store(true)
	// The last answer was at t0; pings at t0+2s … t0+8s fail but 10s has not passed.
	for i := range 4 {
		clk.Advance(2 * time.Second)
		tick()
		if h.Unreachable() {
			t.Fatalf("unreachable after %d failed pings, before GiveUpAfter", n-1)
		}
		// Quiet once silent for more than two intervals (t0+6s on): the
		// leader moves nothing although the member has not given up.
		if want := i >= 2; h.Quiet() != want {
			t.Fatalf("silent for %ds: Quiet %v, want %v", 2*(i+1), h.Quiet(), want)
		}
	}
	select {
	case <-changed:
		t.Fatal("the change channel closed without a change")
	default:
	}
	clk.Advance(2 * time.Second) // t0+10s: silent for GiveUpAfter
	tick()
	if !h.Unreachable() {
		t.Fatal("no answer for GiveUpAfter: want unreachable")
	}
	if a := h.Answers(); a != 1 {
		t.Fatalf("failed pings are no answers: want Answers 1, have %d", a)
	}
	<-changed // closed at the transition
	if err := h.Ready(); err == nil {
		t.Fatal("want /readyz to report the give-up")
	}
	_, changed = h.State()
	down.Store(false)
	clk.Advance(2 * time.Second)
	tick()
	if h.Unreachable() || h.Ready() != nil || h.Quiet() {
		t.Fatal("Redis answers again: want reachable, ready and not quiet")
	}
	<-changed

	// A freeze: the clock jumps past GiveUpAfter and the ping in flight
	// failed, but the next one is answered: one failure does not give up.
	_, changed = h.State()
	down.Store(true)
	clk.Advance(15 * time.Second)
	tick()
	if h.Unreachable() {
		t.Fatal("one failed ping after a long gap (a freeze) must not give the queues up")
	}
	down.Store(false)
	clk.Advance(2 * time.Second)
	tick()
	select {
	case <-changed:
		t.Fatal("a freeze changed the verdict")
	default:
	}
}

// probeRedis gives members a and b Redis probers (give-up 300 ms, a ping
// every 50 ms) whose pings are answered, except cut's while the returned
// flag is set.
func (f *fleet) probeRedis(cut string) *atomic.Bool {
	t := f.t
	down := new(atomic.Bool)
	f.health = map[string]*RedisHealth{}
	for _, n := range []string{"a", "b"} {
		ping := func(context.Context) error { return nil }
		if n == cut {
			ping = func(context.Context) error {
				if down.Load() {
					return errors.New("dial tcp: i/o timeout")
				}
				return nil
			}
		}
		h, err := NewRedisHealth(RedisHealthConfig{Ping: ping, GiveUpAfter: 300 * time.Millisecond, Interval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); h.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		f.health[n] = h
	}
	return down
}

// TestMemberCutOffFromRedisHandsItsQueuesOver on real ZooKeeper: b's Redis
// stops answering (its ping fails); b publishes redis_unreachable through
// its member node and the leader moves every queue to a, with no overlap;
// when b's Redis answers again b takes queues again.
func TestMemberCutOffFromRedisHandsItsQueuesOver(t *testing.T) {
	const queues = 20
	f := newFleet(t, testenv.ZooKeeper(t).Addrs, queues)
	down := f.probeRedis("b")
	f.start("a")
	b := f.start("b")
	f.waitConverged("start")
	if b.runner.owned() == 0 {
		t.Fatal("want b to own queues while it reaches Redis")
	}
	down.Store(true)
	f.waitFor("b's queues to move to a", func() bool {
		an, err := f.obs.Assignments().Read(context.Background())
		if err != nil || len(an.Assignment.Queues) != queues {
			return false
		}
		for _, m := range an.Assignment.Queues {
			if m != "a" {
				return false
			}
		}
		return b.runner.owned() == 0 && f.members["a"].runner.owned() == queues
	})
	if b.Ready() != nil || f.health["b"].Ready() == nil {
		t.Fatal("want b still a member of the fleet, and its Redis check failing")
	}
	down.Store(false)
	f.waitFor("b to take queues again", func() bool {
		ok, _ := f.converged()
		return ok && b.runner.owned() > 0
	})
	f.log.checkNoOverlap(t)
}

// TestALeaderCutOffFromRedisHandsLeadershipAndQueuesOver on real
// ZooKeeper: the rebalance leader's own Redis stops answering. It resigns
// (a member that cannot reach Redis does not lead), the other member
// leads, sees the old leader's flag and, its own Redis answering, moves
// every queue to itself. Without the resignation the old leader holds
// the decision (it has no evidence that Redis answers anyone) and keeps
// leading through the cut.
func TestALeaderCutOffFromRedisHandsLeadershipAndQueuesOver(t *testing.T) {
	const queues = 10
	f := newFleet(t, testenv.ZooKeeper(t).Addrs, queues)
	down := f.probeRedis("a")
	a := f.start("a")
	f.waitFor("a to lead", a.Leading)
	b := f.start("b")
	f.waitConverged("start")
	down.Store(true)
	f.waitFor("b to lead and own every queue while a cannot reach Redis", func() bool {
		an, err := f.obs.Assignments().Read(context.Background())
		if err != nil || len(an.Assignment.Queues) != queues || !b.Leading() || a.Leading() {
			return false
		}
		for _, m := range an.Assignment.Queues {
			if m != "b" {
				return false
			}
		}
		return a.runner.owned() == 0 && b.runner.owned() == queues
	})
	down.Store(false)
	f.waitFor("a to take queues again", func() bool {
		ok, _ := f.converged()
		return ok && a.runner.owned() > 0
	})
	f.log.checkNoOverlap(t)
}

// TestNothingMovesWhileNoMemberReachesRedis on real ZooKeeper: Redis stops
// answering a, then b one failed ping later (members notice one outage in
// turn); both publish redis_unreachable, and the leader writes nothing. The
// fence: when a alone reaches Redis again, the next assignment (every queue
// on a) is exactly one generation after the one before the outage. Fails
// without the leader's grace (a's queues go to b, about to notice too).
// (Without the "every member cut off" rule nothing is written either: the
// strategy refuses an input without members; the fake test above covers
// the rule.)
func TestNothingMovesWhileNoMemberReachesRedis(t *testing.T) {
	const queues = 10
	f := newFleet(t, testenv.ZooKeeper(t).Addrs, queues)
	var downA, downB atomic.Bool
	var failedA atomic.Int64
	f.health = map[string]*RedisHealth{}
	for n, down := range map[string]*atomic.Bool{"a": &downA, "b": &downB} {
		h, err := NewRedisHealth(RedisHealthConfig{
			Ping: func(context.Context) error {
				if down.Load() {
					if n == "a" {
						failedA.Add(1)
					}
					return errors.New("connection refused")
				}
				return nil
			},
			GiveUpAfter: 2 * time.Second, Interval: 400 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); h.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		f.health[n] = h
	}
	f.start("a")
	f.start("b")
	f.waitConverged("start")
	before, err := f.obs.Assignments().Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	downA.Store(true)
	f.waitFor("a's first failed ping", func() bool { return failedA.Load() > 0 })
	downB.Store(true)
	f.waitFor("both members to publish redis_unreachable", func() bool {
		ms, err := f.obs.Group().Members(context.Background())
		n := 0
		for _, m := range ms {
			if m.Member.RedisUnreachable {
				n++
			}
		}
		return err == nil && n == 2
	})
	downA.Store(false)
	f.waitFor("every queue on a, the one member reaching Redis", func() bool {
		an, err := f.obs.Assignments().Read(context.Background())
		if err != nil || len(an.Assignment.Queues) != queues {
			return false
		}
		for _, m := range an.Assignment.Queues {
			if m != "a" {
				return false
			}
		}
		return true
	})
	after, err := f.obs.Assignments().Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after.Assignment.Generation != before.Assignment.Generation+1 {
		t.Fatalf("want no assignment written while no member reached Redis: generation %d before, %d after a came back (want %d)",
			before.Assignment.Generation, after.Assignment.Generation, before.Assignment.Generation+1)
	}
	f.log.checkNoOverlap(t)
}
