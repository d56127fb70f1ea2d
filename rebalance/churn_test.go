package rebalance

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// Issue 40: which of a donor's equal queues moves is never chosen by name
// order. Before, the first by name moved: a retirement beside live
// customers gave away the same customer every time. Each case has member
// a give n queues to a joiner b; the queues moved must be the n of lowest
// moveRank among those not hinted idle, after the idle ones.
func TestStickyTieOrderIsNotNameOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queues int
		idle   []int // indexes of queues hinted idle
	}{
		{name: "no hint: 10 queues, 5 move", queues: 10},
		{name: "no hint: 400 queues, 200 move", queues: 400},
		{name: "the last by name hinted idle move first", queues: 10, idle: []int{9, 8, 7}},
		{name: "more idle than moves: only idle move", queues: 20, idle: []int{19, 17, 15, 13, 11, 9, 7, 5, 3, 1, 0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var qs []Queue
			prev := map[string]string{}
			for i := range tc.queues {
				n := fmt.Sprintf("cust-%04d", i)
				qs = append(qs, Queue{Name: n})
				prev[n] = "a"
			}
			idle := map[string]bool{}
			for _, i := range tc.idle {
				idle[qs[i].Name] = true
			}
			res := mustAssign(t, Sticky{}, Input{Previous: prev, Members: []Member{{Name: "a"}, {Name: "b"}}, Queues: qs, Idle: idle})
			var moved []string
			for _, mv := range Moves(prev, res.Queues) {
				moved = append(moved, mv.Queue)
			}
			n := tc.queues / 2
			// The expected order: idle first, then the lowest rank.
			order := make([]string, 0, len(qs))
			for _, q := range qs {
				order = append(order, q.Name)
			}
			slices.SortFunc(order, func(x, y string) int {
				if idle[x] != idle[y] {
					if idle[x] {
						return -1
					}
					return 1
				}
				if rx, ry := moveRank(x), moveRank(y); rx != ry {
					if rx < ry {
						return -1
					}
					return 1
				}
				return strings.Compare(x, y)
			})
			want := slices.Sorted(slices.Values(order[:n]))
			if !slices.Equal(moved, want) {
				t.Fatalf("want %v moved (idle first, then by hash), have %v", want, moved)
			}
			if len(tc.idle) == 0 {
				byName := make([]string, n)
				for i := range byName {
					byName[i] = qs[i].Name
				}
				if slices.Equal(moved, byName) {
					t.Fatalf("the first %d queues by name moved: %v", n, moved)
				}
			}
		})
	}
}

// The mirror of TestPlacerPlacesAsStickyWould (issue 40): after a churn —
// queues placed by the Placer, queues removed with Placer.Remove, then one
// correction as the rebalance leader makes it (Sticky over the result,
// preferring a random half of the queues as idle) — Sticky computed
// again moves nothing. Placer.Balanced says, before the correction,
// exactly whether Sticky would move anything.
func TestChurnThenCorrectionLeavesNothingToMove(t *testing.T) {
	r := rand.New(rand.NewSource(*seedFlag))
	for n := range 300 {
		weights := n%2 == 1
		members := make([]Member, 1+r.Intn(8))
		for i := range members {
			members[i] = Member{Name: fmt.Sprintf("m%02d", i), Capacity: 1 + r.Intn(3)*r.Intn(2)}
		}
		next := 0
		newQueue := func() Queue {
			q := Queue{Name: fmt.Sprintf("q%05d", next)}
			next++
			if weights {
				q.Weight = 1 + r.Intn(4)
			}
			return q
		}
		all := map[string]Queue{}
		var initial []Queue
		for range r.Intn(200) {
			q := newQueue()
			initial = append(initial, q)
			all[q.Name] = q
		}
		assigned := mustAssign(t, Sticky{}, Input{Members: members, Queues: initial}).Queues
		load := map[string]int64{}
		for _, q := range initial {
			load[assigned[q.Name]] += Weight(q)
		}
		p := NewPlacer(members, load)
		label := fmt.Sprintf("case %d (%d members, weights %v)", n, len(members), weights)
		for round := range 1 + r.Intn(4) {
			// Remove some queues, skewed towards members that sort first,
			// as a family retiring its keys can leave one member light.
			for name, q := range all {
				m := assigned[name]
				if r.Intn(3) == 0 || (m == members[0].Name && r.Intn(2) == 0) {
					p.Remove(m, q)
					delete(assigned, name)
					delete(all, name)
				}
			}
			var added []Queue
			for range r.Intn(60) {
				q := newQueue()
				added = append(added, q)
				all[q.Name] = q
			}
			placed, ok := p.Place(added)
			if !ok {
				t.Fatalf("%s: untagged queues refused", label)
			}
			maps.Copy(assigned, placed)
			qs := slices.Collect(maps.Values(all))
			var maxWeight int64
			for _, q := range qs {
				maxWeight = max(maxWeight, Weight(q))
			}
			whole := mustAssign(t, Sticky{}, Input{Previous: assigned, Members: members, Queues: qs})
			moves := len(Moves(assigned, whole.Queues))
			if p.Balanced(maxWeight) != (moves == 0) {
				t.Fatalf("%s round %d: Balanced says %v, a whole computation moves %d", label, round, p.Balanced(maxWeight), moves)
			}
			if want := loads(Input{Members: members, Queues: qs}, Result{Queues: assigned}); !maps.Equal(zeroless(p.Loads()), zeroless(want)) {
				t.Fatalf("%s round %d: placer loads %v, want %v", label, round, p.Loads(), want)
			}
			if moves == 0 {
				continue
			}
			// The correction: Sticky preferring idle queues; the moves
			// are as many as without the hint.
			idle := map[string]bool{}
			for _, q := range qs {
				if r.Intn(2) == 0 {
					idle[q.Name] = true
				}
			}
			corrected := mustAssign(t, Sticky{}, Input{Previous: assigned, Members: members, Queues: qs, Idle: idle})
			if !weights {
				if cm := len(Moves(assigned, corrected.Queues)); cm != moves {
					t.Fatalf("%s round %d: the idle hint changed the number of moves: %d, want %d", label, round, cm, moves)
				}
			}
			for _, mv := range Moves(assigned, corrected.Queues) {
				p.Move(all[mv.Queue], mv.From, mv.To)
			}
			assigned = corrected.Queues
			if !p.Balanced(maxWeight) {
				t.Fatalf("%s round %d: not balanced after the correction", label, round)
			}
			again := mustAssign(t, Sticky{}, Input{Previous: assigned, Members: members, Queues: qs})
			if m := len(Moves(assigned, again.Queues)); m != 0 {
				t.Fatalf("%s round %d: a whole computation after the correction moves %d", label, round, m)
			}
		}
	}
}

func zeroless(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}
