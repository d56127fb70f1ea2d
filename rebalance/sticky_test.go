package rebalance

import (
	"fmt"
	"testing"
)

// TestStickyJoinAndLeaveInALargeFleet: in a balanced fleet of 100 members
// and 10,000 queues, a joining member takes exactly its share, all of it
// from the others and nothing moving between them, and a leaving member's
// queues are the only ones that move.
func TestStickyJoinAndLeaveInALargeFleet(t *testing.T) {
	ms, qs := benchFleet(100, 10000, false)
	base := mustAssign(t, Sticky{}, Input{Members: ms, Queues: qs})
	checkStickyBound(t, "fresh", Input{Members: ms, Queues: qs}, base)

	for _, joiner := range []Member{{Name: "worker-new", Capacity: 1}, {Name: "a-big-one", Capacity: 10}} {
		in := Input{Previous: base.Queues, Members: append(ms[:len(ms):len(ms)], joiner), Queues: qs}
		res := mustAssign(t, Sticky{}, in)
		checkValid(t, "join", in, res)
		moves := Moves(base.Queues, res.Queues)
		for _, m := range moves {
			if m.To != joiner.Name {
				t.Fatalf("join of %s: want every move to go to it, have %+v", joiner.Name, m)
			}
		}
		// Its share is 10,000·c/(100+c): 99.01 for capacity 1, 909.09 for 10.
		want := 10000 * joiner.Capacity / (100 + joiner.Capacity)
		if len(moves) != want {
			t.Fatalf("join of %s (capacity %d): want it to take ⌊share⌋ = %d queues, have %d",
				joiner.Name, joiner.Capacity, want, len(moves))
		}
	}

	for _, leaver := range []int{0, 57, 99} {
		in := Input{Previous: base.Queues, Queues: qs}
		for i, m := range ms {
			if i != leaver {
				in.Members = append(in.Members, m)
			}
		}
		res := mustAssign(t, Sticky{}, in)
		checkValid(t, "leave", in, res)
		checkStickyBound(t, "leave", in, res)
		moves := Moves(base.Queues, res.Queues)
		for _, m := range moves {
			if m.From != ms[leaver].Name {
				t.Fatalf("leave of %s: want only its queues to move, have %+v", ms[leaver].Name, m)
			}
		}
		if len(moves) != 100 {
			t.Fatalf("leave of %s: want its 100 queues to move, have %d moves", ms[leaver].Name, len(moves))
		}
	}
}

// TestStickyMemberLosesATag: when a member stops offering a tag, the queues
// that need it leave that member and it is topped up with as many queues it
// may still own, so every member keeps the fair load of 10; nothing else
// moves.
func TestStickyMemberLosesATag(t *testing.T) {
	var in Input
	for i := range 6 {
		in.Members = append(in.Members, Member{Name: fmt.Sprintf("m%d", i), Tags: []string{"eu"}})
	}
	for i := range 60 {
		q := Queue{Name: fmt.Sprintf("q%02d", i)}
		if i%2 == 0 {
			q.Tags = []string{"eu"}
		}
		in.Queues = append(in.Queues, q)
	}
	before := mustAssign(t, Sticky{}, in)
	in.Previous = before.Queues
	in.Members[2].Tags = nil // m2 leaves the eu pool
	after := mustAssign(t, Sticky{}, in)
	checkValid(t, "after", in, after)

	isEU := func(q string) bool { return int(q[len(q)-1]-'0')%2 == 0 } // even numbers
	var hadEU, lost, gained int
	for q, m := range before.Queues {
		if m == "m2" && isEU(q) {
			hadEU++
		}
	}
	for _, m := range Moves(before.Queues, after.Queues) {
		switch {
		case m.From == "m2" && isEU(m.Queue):
			lost++
		case m.To == "m2" && !isEU(m.Queue):
			gained++
		default:
			t.Fatalf("want only m2's eu queues to leave it and plain queues to join it, have %+v", m)
		}
	}
	if hadEU == 0 || lost != hadEU || gained != hadEU {
		t.Fatalf("want m2 to lose its %d eu queues and gain as many plain ones, have lost %d, gained %d", hadEU, lost, gained)
	}
	for m, l := range loads(in, after) {
		if l != 10 {
			t.Fatalf("want every member at load 10, have %s at %d", m, l)
		}
	}
}
