package fleet

import (
	"context"
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

// fakeActivity says the queues in busy hold messages, and records the
// batches it was asked about.
type fakeActivity struct {
	busy map[string]bool
	mu   sync.Mutex
	asks [][]string
}

func (a *fakeActivity) NonEmpty(_ context.Context, qs []string) ([]bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asks = append(a.asks, slices.Clone(qs))
	out := make([]bool, len(qs))
	for i, q := range qs {
		out[i] = a.busy[q]
	}
	return out, nil
}

// churnRun is a rebalancer on fakes with a fake clock, a fake Activity
// and counters of what it wrote.
type churnRun struct {
	s     *fakeLeaderSession
	clock *testkit.Clock
	act   *fakeActivity
	mu    sync.Mutex
	whole int   // whole computations written (OnRebalance)
	moved []int // queues moved by each correction (OnCorrection)
	gone  int   // queues removed without computing (OnRemoved)
}

const churnSettle = 100 * time.Millisecond

// churnBalanceEvery is the pacing of corrections in these tests: a day,
// so that the settle windows written() advances the clock by (once per
// poll until the write appears, more often on a loaded machine) never add
// up to it; a test reaches a correction only by advancing the clock by it.
// With the default 10 s, 30 windows polled a few times each on a machine
// at load 50 passed the interval and a correction came early.
const churnBalanceEvery = 24 * time.Hour

func startChurn(t *testing.T, busy map[string]bool, activity bool) *churnRun {
	t.Helper()
	cr := &churnRun{s: newFakeLeaderSession(), clock: testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), act: &fakeActivity{busy: busy}}
	// Unbuffered: a send returns once the relay took it, so after two
	// sends the leader has received the first.
	cr.s.queues = make(chan coordinator.Registry)
	cfg := RebalancerConfig{
		Session: cr.s, Elector: &fakeElector{s: cr.s.fakeSession}, Candidate: "me", Settle: churnSettle, BalanceEvery: churnBalanceEvery, Clock: cr.clock,
		Logger:      testkit.Logger(t, hclog.Warn),
		OnRebalance: func(drover.Assignment, int, time.Duration) { cr.mu.Lock(); cr.whole++; cr.mu.Unlock() },
		OnCorrection: func(n int) {
			cr.mu.Lock()
			cr.moved = append(cr.moved, n)
			cr.mu.Unlock()
		},
		OnRemoved: func(n int) { cr.mu.Lock(); cr.gone += n; cr.mu.Unlock() },
	}
	if activity {
		cfg.Activity = cr.act
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunRebalancer(ctx, cfg) }()
	t.Cleanup(func() { cancel(); <-done })
	return cr
}

// registry sends reg and then again, so that the leader has it when this
// returns.
func (cr *churnRun) registry(reg coordinator.Registry) {
	cr.s.queues <- reg
	cr.s.queues <- reg
}

// written advances the clock by the settle window until n assignments are
// written, and returns the n-th.
func (cr *churnRun) written(t *testing.T, n int) drover.Assignment {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("assignment %d written", n), func() bool {
		if len(cr.s.writes()) >= n {
			return true
		}
		cr.clock.Advance(churnSettle)
		return false
	})
	return cr.s.writes()[n-1]
}

// await waits until the counters reach corrections and removed: the
// callbacks run after the write the fake records.
func (cr *churnRun) await(t *testing.T, corrections, removed int) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%d corrections and %d queues removed reported", corrections, removed), func() bool {
		_, c, r := cr.counts()
		return len(c) >= corrections && r >= removed
	})
}

func (cr *churnRun) counts() (whole int, corrections []int, gone int) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.whole, slices.Clone(cr.moved), cr.gone
}

func registryOf(names []string) coordinator.Registry {
	return queues(names...)
}

// without returns names less those in drop.
func without(names []string, drop map[string]bool) []string {
	var out []string
	for _, n := range names {
		if !drop[n] {
			out = append(out, n)
		}
	}
	return out
}

// TestRetiringIdleQueuesLeavesBusyOnesAlone is issue 40's measurement on
// fakes: 10 busy keys that sort first beside 4,000 idle ones on two
// members; 3,000 idle keys retire, most of them b's. The removals are
// written without a whole computation and move nothing; the one
// correction that follows, once the pacing interval passed on the clock,
// moves only idle queues, and after it a whole computation moves nothing.
// On the leader that recomputed at each removal, the removals were whole
// computations and gave away a's first queues by name: the busy ones.
func TestRetiringIdleQueuesLeavesBusyOnesAlone(t *testing.T) {
	busy := map[string]bool{}
	var names []string
	for i := range 10 {
		n := fmt.Sprintf("acct-%02d", i) // sorting before every idle key
		busy[n] = true
		names = append(names, n)
	}
	for i := range 4000 {
		names = append(names, fmt.Sprintf("cust-%05d", i))
	}
	cr := startChurn(t, busy, true)
	cr.s.members <- members("a", "b")
	cr.registry(registryOf(names))
	first := cr.written(t, 1)
	// Retire 3,000 idle keys: every idle key of b's first, then a's.
	var retire []string
	for _, owner := range []string{"b", "a"} {
		for _, n := range names {
			if first.Queues[n] == owner && !busy[n] && len(retire) < 3000 {
				retire = append(retire, n)
			}
		}
	}
	gone := map[string]bool{}
	for i := 0; i < len(retire); i += 100 {
		for _, n := range retire[i : i+100] {
			gone[n] = true
		}
		cr.registry(registryOf(without(names, gone)))
		cr.written(t, 2+i/100)
	}
	cr.await(t, 0, 3000)
	whole, corrections, removed := cr.counts()
	if whole != 1 || len(corrections) != 0 || removed != 3000 {
		t.Fatalf("3,000 retirements in 30 windows: want 1 whole computation (the first), no correction yet, 3,000 removed without computing; have %d, %v, %d", whole, corrections, removed)
	}
	writes := cr.s.writes()
	for i, a := range writes[1:] {
		if moves := rebalance.Moves(writes[i].Queues, a.Queues); slices.ContainsFunc(moves, func(m rebalance.Move) bool { return m.Handover() }) {
			t.Fatalf("removal write %d moved queues: %v", i+1, moves)
		}
	}
	before := writes[len(writes)-1]
	// a owns about 1,000 queues and b 5: out of balance. The correction
	// comes once the pacing interval has passed on the clock.
	cr.clock.Advance(churnBalanceEvery)
	after := cr.written(t, len(writes)+1)
	cr.await(t, 1, 3000)
	whole, corrections, _ = cr.counts()
	if whole != 1 || len(corrections) != 1 {
		t.Fatalf("want one correction and no whole computation, have %d whole, corrections %v", whole, corrections)
	}
	moves := rebalance.Moves(before.Queues, after.Queues)
	if len(moves) == 0 || len(moves) != corrections[0] {
		t.Fatalf("the correction: %d moves, reported %v", len(moves), corrections)
	}
	// Computed from the loads and written as the queues that move (a
	// Move), not as two whole computations and a whole write, which held
	// the leader's loop about 1.5 s at 110,000 queues while new keys
	// waited to be placed.
	cr.s.mu.Lock()
	moveWrites := cr.s.moves
	cr.s.mu.Unlock()
	if moveWrites != 1 {
		t.Fatalf("the correction: want it written as one Move, have %d Move writes", moveWrites)
	}
	for _, m := range moves {
		if busy[m.Queue] {
			t.Fatalf("the correction moved busy queue %s (%s → %s)", m.Queue, m.From, m.To)
		}
	}
	for n := range busy {
		if first.Queues[n] != after.Queues[n] {
			t.Fatalf("busy %s moved from %s to %s", n, first.Queues[n], after.Queues[n])
		}
	}
	left := without(names, gone)
	var qs []rebalance.Queue
	for _, n := range left {
		qs = append(qs, rebalance.Queue{Name: n})
	}
	again, err := rebalance.Sticky{}.Assign(rebalance.Input{Previous: after.Queues, Members: []rebalance.Member{{Name: "a", Capacity: 1}, {Name: "b", Capacity: 1}}, Queues: qs})
	if err != nil {
		t.Fatal(err)
	}
	if m := rebalance.Moves(after.Queues, again.Queues); len(m) != 0 {
		t.Fatalf("a whole computation after the correction moves %d queues", len(m))
	}
	// The candidates were examined in batches, not one by one, and not
	// in name order.
	cr.act.mu.Lock()
	asks := slices.Clone(cr.act.asks)
	cr.act.mu.Unlock()
	if len(asks) == 0 || len(asks) > 4 {
		t.Fatalf("want the candidates examined in a few batches, have %d", len(asks))
	}
	if slices.IsSorted(asks[0]) {
		t.Fatalf("the candidates were examined in name order: %v…", asks[0][:5])
	}
}

// TestRemovalsInOneSettleWindowAreOneWrite: three registry snapshots
// that each remove queues, delivered before the settle window ends, are
// taken out in one write (the first write after them holds every
// removal).
func TestRemovalsInOneSettleWindowAreOneWrite(t *testing.T) {
	cr, names, _ := startSixtyOnThree(t)
	gone := map[string]bool{}
	for i := range 3 {
		gone[names[i]], gone[names[10+i]] = true, true
		cr.registry(registryOf(without(names, gone)))
	}
	a := cr.written(t, 2)
	if len(a.Queues) != 54 {
		t.Fatalf("the first write after three removing snapshots: want 54 queues, have %d", len(a.Queues))
	}
	for q := range gone {
		if _, ok := a.Queues[q]; ok {
			t.Fatalf("the first write after the window still holds %s", q)
		}
	}
	cr.await(t, 0, 6)
	whole, _, removed := cr.counts()
	if whole != 1 || removed != 6 {
		t.Fatalf("want 6 removed without computing, 1 whole computation, have %d removed, %d whole", removed, whole)
	}
}

// TestCorrectionsArePaced: removals that unbalance the fleet again right
// after a correction wait for the pacing interval on the clock; the
// corrections move only idle queues. The writes come in the order
// removal, correction, removal, removal, correction: never a correction
// before its interval.
func TestCorrectionsArePaced(t *testing.T) {
	busy := map[string]bool{}
	var names []string
	for i := range 400 {
		n := fmt.Sprintf("q%03d", i)
		names = append(names, n)
		if i%3 == 0 {
			busy[n] = true
		}
	}
	cr := startChurn(t, busy, true)
	cr.s.members <- members("a", "b")
	cr.registry(registryOf(names))
	first := cr.written(t, 1)
	gone := map[string]bool{}
	// retireFrom retires n idle queues of owner, as the assignment a has it.
	retireFrom := func(a drover.Assignment, owner string, n int) {
		for _, q := range slices.Sorted(maps.Keys(a.Queues)) {
			if n > 0 && a.Queues[q] == owner && !busy[q] && !gone[q] {
				gone[q] = true
				n--
			}
		}
		cr.registry(registryOf(without(names, gone)))
	}
	retireFrom(first, "b", 60)
	second := cr.written(t, 2) // the removal
	cr.clock.Advance(churnBalanceEvery)
	third := cr.written(t, 3) // the first correction
	cr.await(t, 1, 60)
	checkIdleMoves(t, busy, second, third)
	retireFrom(third, "b", 40)
	cr.written(t, 4)
	cr.clock.Advance(churnBalanceEvery / 2)
	retireFrom(cr.s.writes()[3], "b", 40)
	fifth := cr.written(t, 5)
	if n4, n5 := len(cr.s.writes()[3].Queues), len(fifth.Queues); n4 != 300 || n5 != 260 {
		t.Fatalf("writes 4 and 5: want the two removals (300 and 260 queues), have %d and %d queues", n4, n5)
	}
	if _, corr, _ := cr.counts(); len(corr) != 1 {
		t.Fatalf("a correction before the pacing interval: corrections %v", corr)
	}
	cr.clock.Advance(churnBalanceEvery / 2)
	sixth := cr.written(t, 6)
	cr.await(t, 2, 140)
	whole, corr, _ := cr.counts()
	if whole != 1 || len(corr) != 2 {
		t.Fatalf("want the second correction once the interval passed and no whole computation, have %d whole, corrections %v", whole, corr)
	}
	checkIdleMoves(t, busy, fifth, sixth)
}

func checkIdleMoves(t *testing.T, busy map[string]bool, from, to drover.Assignment) {
	t.Helper()
	moves := rebalance.Moves(from.Queues, to.Queues)
	if len(moves) == 0 {
		t.Fatal("the correction moved nothing")
	}
	for _, m := range moves {
		if !m.Handover() || busy[m.Queue] {
			t.Fatalf("the correction made move %+v: want only idle queues handed over", m)
		}
	}
}

// With no Activity a correction still moves queues, in the seeded order,
// and a donor without idle queues keeps its busy ones.
func TestCorrectionWithoutIdleQueues(t *testing.T) {
	busy := map[string]bool{}
	var names []string
	for i := range 40 {
		n := fmt.Sprintf("q%02d", i)
		names = append(names, n)
		busy[n] = true
	}
	for _, activity := range []bool{false, true} {
		t.Run(fmt.Sprintf("activity %v", activity), func(t *testing.T) {
			cr := startChurn(t, busy, activity)
			cr.s.members <- members("a", "b")
			cr.registry(registryOf(names))
			first := cr.written(t, 1)
			gone := map[string]bool{}
			for _, q := range names {
				if first.Queues[q] == "b" && len(gone) < 10 {
					gone[q] = true
				}
			}
			cr.registry(registryOf(without(names, gone)))
			cr.written(t, 2)
			cr.clock.Advance(churnBalanceEvery)
			if !activity {
				third := cr.written(t, 3)
				if n := len(rebalance.Moves(cr.s.writes()[1].Queues, third.Queues)); n != 5 {
					t.Fatalf("without Activity: want the 5 moves sticky makes, have %d", n)
				}
				return
			}
			// Every queue is busy: the correction examines a's and moves
			// nothing; a later removal is still written as one.
			testkit.Eventually(t, "the candidates examined", func() bool {
				cr.act.mu.Lock()
				defer cr.act.mu.Unlock()
				return len(cr.act.asks) > 0
			})
			for _, q := range names {
				if first.Queues[q] == "b" && !gone[q] {
					gone[q] = true
					break
				}
			}
			cr.registry(registryOf(without(names, gone)))
			third := cr.written(t, 3)
			if _, corr, _ := cr.counts(); len(corr) != 0 || len(third.Queues) != 29 {
				t.Fatalf("want no correction and the removal written, have corrections %v and %d queues", corr, len(third.Queues))
			}
		})
	}
}

// A correction while a churning family's newest keys are placed ahead of
// the registry watch (placeCreated: the registry does not list them yet)
// is still computed from the loads and written as the queues that move.
// The computation from the loads first refused whenever such keys were
// pending, which in a churn is always: every correction went back to two
// whole Sticky runs and a whole write (0.2–0.75 s of the leader's loop at
// 110,000 queues in the churn bench).
func TestACorrectionWithKeysPlacedAheadOfTheRegistryMoves(t *testing.T) {
	f := newTwoMemberPlacement(2000)
	s, w, lead, live, names, assigned, p := f.s, f.w, f.lead, f.live, f.names, f.assigned, &f.p
	log := testkit.Logger(t, hclog.Warn)
	ctx := context.Background()
	// b's keys retire: the registry lists only a's, a is out of balance.
	var left []string
	for _, n := range names {
		if assigned[n] == "a" {
			left = append(left, n)
		}
	}
	if handled, err := p.placeNew(ctx, time.Now(), lead, w, live, registryOf(left), log); !handled || err != nil {
		t.Fatalf("the removals: handled %v, %v", handled, err)
	}
	// New keys the registrar created, placed before the watch lists them.
	var fresh []drover.QueueConfig
	for i := range 10 {
		fresh = append(fresh, drover.QueueConfig{Name: fmt.Sprintf("new-%02d", i)})
	}
	if err := p.placeCreated(ctx, time.Now(), lead, w, live, registryOf(left), fresh, log); err != nil {
		t.Fatal(err)
	}
	if len(p.unlisted) == 0 {
		t.Fatal("want the new keys pending as placed ahead of the registry")
	}
	before := w.Current()
	moved, err := p.correct(ctx, lead, w, RebalancerConfig{Strategy: rebalance.Sticky{}}, live, log)
	if err != nil || moved == 0 {
		t.Fatalf("the correction: moved %d, %v", moved, err)
	}
	s.mu.Lock()
	moves := s.moves
	s.mu.Unlock()
	if moves != 1 {
		t.Fatalf("want the correction written as one Move, have %d Move writes", moves)
	}
	after := w.Current()
	for _, f := range fresh {
		if before.Queues[f.Name] != after.Queues[f.Name] {
			t.Fatalf("a key placed ahead of the registry moved: %s", f.Name)
		}
	}
	var all []rebalance.Queue
	for q := range after.Queues {
		all = append(all, rebalance.Queue{Name: q})
	}
	again, err := rebalance.Sticky{}.Assign(rebalance.Input{Previous: after.Queues, Members: live, Queues: all})
	if err != nil {
		t.Fatal(err)
	}
	if m := rebalance.Moves(after.Queues, again.Queues); len(m) != 0 {
		t.Fatalf("a whole computation after the correction moves %d queues", len(m))
	}
}
