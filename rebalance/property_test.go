package rebalance

import (
	"flag"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

var seedFlag = flag.Int64("rebalance.seed", 20251121, "seed of the random cases of the property tests")

var strategies = []Strategy{Sticky{}, Range{}, RoundRobin{}}

// randomShape draws the shape of one case: mostly small, sometimes medium;
// the big ones come from TestPropertiesBig so that their number stays small.
func randomShape(r *rand.Rand) caseShape {
	s := caseShape{
		capacities: r.Intn(2) == 0,
		weights:    r.Intn(2) == 0,
		tags:       r.Intn(3) == 0,
		previous:   r.Intn(4) != 0,
	}
	s.universal = s.tags && r.Intn(4) == 0
	switch n := r.Intn(10); {
	case n < 6:
		s.members = 1 + r.Intn(10)
	case n < 9:
		s.members = 11 + r.Intn(40)
	default:
		s.members = 51 + r.Intn(150)
	}
	switch n := r.Intn(100); {
	case n < 5:
		s.queues = 0
	case n < 90:
		s.queues = 1 + r.Intn(60)
	default:
		s.queues = 61 + r.Intn(1940)
	}
	return s
}

// TestPropertiesRandom checks every strategy's guarantees over thousands of
// random cases. Reproduce a failure with -rebalance.seed=<seed it printed>.
func TestPropertiesRandom(t *testing.T) {
	seed := *seedFlag
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	cases := 2500
	if testing.Short() {
		cases = 300
	}
	for n := range cases {
		shape := randomShape(r)
		label := fmt.Sprintf("seed %d case %d %+v", seed, n, shape)
		checkCase(t, r, label, shape)
	}
}

// TestPropertiesBig checks the same guarantees on a few cases of up to 200
// members and 20,000 queues.
func TestPropertiesBig(t *testing.T) {
	seed := *seedFlag + 1
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	cases := 5
	if testing.Short() {
		cases = 1
	}
	for n := range cases {
		shape := caseShape{
			members:    1 + r.Intn(200),
			queues:     2000 + r.Intn(18001),
			capacities: n%2 == 0,
			weights:    n%3 == 0,
			tags:       n%3 == 1,
			previous:   true,
		}
		label := fmt.Sprintf("seed %d big case %d %+v", seed, n, shape)
		checkCase(t, r, label, shape)
	}
}

// checkCase generates one input of shape and checks every strategy on it.
func checkCase(t *testing.T, r *rand.Rand, label string, shape caseShape) {
	t.Helper()
	in := gen(r, shape)
	for _, s := range strategies {
		label := label + " " + s.Name()
		res := mustAssign(t, s, in)
		checkValid(t, label, in, res)
		if again := mustAssign(t, s, in); !reflect.DeepEqual(again, res) {
			t.Fatalf("%s: the same input gave two different results", label)
		}
		if other := mustAssign(t, s, shuffled(r, in)); !reflect.DeepEqual(other, res) {
			t.Fatalf("%s: the same input in another order gave another result", label)
		}
		if other := mustAssign(t, s, sourced(shuffled(r, in))); !reflect.DeepEqual(other, res) {
			t.Fatalf("%s: the same queues given through a Source gave another result", label)
		}
		if !constrained(in) {
			if s.Name() == StickyName {
				checkStickyBound(t, label, in, res)
			} else {
				checkCountBound(t, label, in, res)
			}
		}
		if s.Name() == StickyName {
			checkStickyMoves(t, r, label, in, res, shape)
		}
	}
}

// checkStickyMoves checks that sticky moves no more than balance needs:
// re-running on its own result moves nothing; with unit weights every run
// moves exactly the minimum the bound forces; a member joining takes its
// share and every move goes to it (or to a member as idle as it); a member
// leaving moves only its own queues where the bound allows that.
func checkStickyMoves(t *testing.T, r *rand.Rand, label string, in Input, res Result, shape caseShape) {
	t.Helper()
	s := Sticky{}
	if !constrained(in) && !shape.weights {
		checkMinimalMoves(t, label, in, res)
	}

	rerun := in
	rerun.Previous = res.Queues
	if moves := Moves(res.Queues, mustAssign(t, s, rerun).Queues); len(moves) != 0 {
		t.Fatalf("%s: re-running on its own result, want no moves, have %d: %v", label, len(moves), moves[:min(len(moves), 5)])
	}

	// Join.
	joiner := Member{Name: "a-joiner", Capacity: 1, Tags: []string{"gpu", "ssd", "eu", "us", "big"}}
	if r.Intn(2) == 0 {
		joiner.Name = "z-joiner" // sorts last rather than first
	}
	if shape.capacities {
		joiner.Capacity = 1 + r.Intn(8)
	}
	join := Input{Previous: res.Queues, Members: append(slices.Clone(in.Members), joiner), Queues: in.Queues}
	joined := mustAssign(t, s, join)
	checkValid(t, label+" join", join, joined)
	untagged := !constrained(join)
	unit := untagged && !shape.weights
	if untagged {
		checkStickyBound(t, label+" join", join, joined)
		// A member that owned nothing is, to the strategy, as new as the
		// joiner; moves may go to either.
		idle := map[string]bool{joiner.Name: true}
		for _, m := range in.Members {
			idle[m.Name] = true
		}
		for _, m := range res.Queues {
			delete(idle, m)
		}
		// A move between two old members is allowed only once the joiner
		// holds its full share (load ≥ W·c/C): it may take no more.
		var total, capacity int64
		for _, q := range join.Queues {
			total += clamp(q.Weight, MaxWeight)
		}
		for _, m := range join.Members {
			capacity += clamp(m.Capacity, MaxCapacity)
		}
		full := loads(join, joined)[joiner.Name]*capacity >= total*clamp(joiner.Capacity, MaxCapacity)
		for _, m := range Moves(res.Queues, joined.Queues) {
			if !idle[m.To] && !full {
				t.Fatalf("%s join: want every move to go to %s or a member that owned nothing while %[2]s is below its share, have %+v",
					label, joiner.Name, m)
			}
		}
	}
	if unit {
		checkMinimalMoves(t, label+" join", join, joined)
	}

	// Leave.
	if len(in.Members) < 2 {
		return
	}
	leaver := in.Members[r.Intn(len(in.Members))]
	leave := Input{Previous: res.Queues, Queues: in.Queues}
	for _, m := range in.Members {
		if m.Name != leaver.Name {
			leave.Members = append(leave.Members, m)
		}
	}
	left := mustAssign(t, s, leave)
	checkValid(t, label+" leave", leave, left)
	untagged = !constrained(leave)
	unit = untagged && !shape.weights
	if untagged {
		checkStickyBound(t, label+" leave", leave, left)
	}
	if unit {
		checkMinimalMoves(t, label+" leave", leave, left)
	}
	// With unit weights and equal capacities, when Q ≥ (n−1)² for n members
	// before the leave, no remaining member owns more than Q/(n−1), so the
	// leaver's queues are enough to fill everyone up: nothing else moves.
	if unit && !shape.capacities && len(in.Queues) >= (len(in.Members)-1)*(len(in.Members)-1) {
		for _, m := range Moves(res.Queues, left.Queues) {
			if m.From != leaver.Name {
				t.Fatalf("%s leave of %s: want only its queues to move, have %+v", label, leaver.Name, m)
			}
		}
	}
}
