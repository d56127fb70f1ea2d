package rebalance

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"

	"github.com/drover-dev/drover/internal/namehash"
)

// TestReassignIsStickyOverWhatMoves checks Reassign against Sticky on
// random fleets without tags, after members join, leave and change
// capacity: with unit weights it computes exactly Sticky's assignment;
// with weights, Sticky computed again over its result moves nothing; and
// it held no more queues than the members gone owned plus each donor's
// surplus and two.
func TestReassignIsStickyOverWhatMoves(t *testing.T) {
	r := rand.New(rand.NewSource(*seedFlag + 7))
	for n := range 400 {
		weights := n%2 == 1
		before := make([]Member, 1+r.Intn(10))
		for i := range before {
			before[i] = Member{Name: fmt.Sprintf("m%02d", i), Capacity: 1 + r.Intn(3)*r.Intn(2)}
		}
		qs := make([]Queue, r.Intn(600))
		byName := map[string]Queue{}
		for i := range qs {
			qs[i] = Queue{Name: fmt.Sprintf("q%05d", i)}
			if weights {
				qs[i].Weight = 1 + r.Intn(4)
			}
			byName[qs[i].Name] = qs[i]
		}
		prev := mustAssign(t, Sticky{}, Input{Members: before, Queues: qs})
		load := map[string]int64{}
		var maxWeight int64
		for _, q := range qs {
			load[prev.Queues[q.Name]] += Weight(q)
			maxWeight = max(maxWeight, Weight(q))
		}
		// The change: some leave, some join, one may change capacity.
		var after []Member
		for _, m := range before {
			switch r.Intn(6) {
			case 0: // gone
			case 1:
				m.Capacity = 1 + r.Intn(4)
				after = append(after, m)
			default:
				after = append(after, m)
			}
		}
		for i := range r.Intn(3) {
			after = append(after, Member{Name: fmt.Sprintf("n%02d", i), Capacity: 1 + r.Intn(2)})
		}
		if len(after) == 0 {
			after = append(after, Member{Name: "n99"})
		}
		p := NewPlacer(before, load)
		lookup := func(name string) (Queue, bool) { q, ok := byName[name]; return q, ok }
		moved, stats, ok := p.Reassign(after, prev.Queues, lookup, maxWeight)
		label := fmt.Sprintf("case %d (%d → %d members, %d queues, weights %v)", n, len(before), len(after), len(qs), weights)
		if !ok {
			t.Fatalf("%s: refused", label)
		}
		next := maps.Clone(prev.Queues)
		maps.Copy(next, moved)
		want := mustAssign(t, Sticky{}, Input{Previous: prev.Queues, Members: after, Queues: qs})
		if !weights && !maps.Equal(want.Queues, next) {
			t.Fatalf("%s: reassigned differently from Sticky (%d moves against %d)", label, len(moved), len(Moves(prev.Queues, want.Queues)))
		}
		again := mustAssign(t, Sticky{}, Input{Previous: next, Members: after, Queues: qs})
		if m := len(Moves(next, again.Queues)); m != 0 {
			t.Fatalf("%s: Sticky moves %d queues of the result", label, m)
		}
		checkStickyBound(t, label, Input{Members: after, Queues: qs}, Result{Queues: next})
		if stats.Moved != len(moved) {
			t.Fatalf("%s: stats say %d moved, %d did", label, stats.Moved, len(moved))
		}
		// The placer now tracks the result: its loads are the result's.
		got := p.Loads()
		for _, m := range after {
			var w int64
			for q, to := range next {
				if to == m.Name {
					w += Weight(byName[q])
				}
			}
			if got[m.Name] != w {
				t.Fatalf("%s: the placer says %s carries %d, the result %d", label, m.Name, got[m.Name], w)
			}
		}
	}
}

// TestReassignExaminesWhatMoves: a member joining 20 members of 5,000
// queues each holds, in the computation, the queues that move and a few
// a donor, not the 100,000 queues assigned.
func TestReassignExaminesWhatMoves(t *testing.T) {
	var members []Member
	for i := range 20 {
		members = append(members, Member{Name: fmt.Sprintf("m%02d", i)})
	}
	qs := make([]Queue, 100_000)
	for i := range qs {
		qs[i] = Queue{Name: fmt.Sprintf("queue-%06d", i)}
	}
	prev := mustAssign(t, Sticky{}, Input{Members: members, Queues: qs})
	load := map[string]int64{}
	for _, m := range prev.Queues {
		load[m]++
	}
	p := NewPlacer(members, load)
	after := append(members, Member{Name: "joined"})
	moved, stats, ok := p.Reassign(after, prev.Queues, func(string) (Queue, bool) { return Queue{}, false }, 1)
	if !ok {
		t.Fatal("refused a join")
	}
	if len(moved) != 100_000/21 {
		t.Fatalf("moved %d queues, want %d (the joiner's share)", len(moved), 100_000/21)
	}
	if limit := len(moved) + 3*len(after); stats.Examined > limit {
		t.Fatalf("the computation held %d queues to move %d: want at most %d", stats.Examined, len(moved), limit)
	}
}

// A member gives up first the queues of one chunk of its share, for every
// number of chunks a share may have: sorted by moveRank, the queues whose
// FNV-1a 32 hash is 0 mod n come first, for every power of two n (the
// ZooKeeper layout's chunk of a queue, coordinator/assignment.go chunkOf).
// With the FNV-1a 64 hash alone, a donor's first hundred queues of ten
// thousand fell in every chunk, and a join rewrote every chunk of every
// donor's share.
func TestAMemberGivesUpTheQueuesOfOneChunkFirst(t *testing.T) {
	names := make([]string, 20_000)
	for i := range names {
		names[i] = fmt.Sprintf("q%06d", i)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(moveRank(a), moveRank(b)) })
	for n := uint32(1); n <= 1024; n *= 2 {
		inFirst := 0
		for _, q := range names {
			if namehash.FNV32a(q)%n != 0 {
				break
			}
			inFirst++
		}
		for _, q := range names[inFirst:] {
			if namehash.FNV32a(q)%n == 0 {
				t.Fatalf("with %d chunks: %s, of chunk 0, ranks after a queue of another chunk (the first %d are chunk 0's)", n, q, inFirst)
			}
		}
		if n <= 64 && inFirst < len(names)/int(n)/2 {
			t.Fatalf("with %d chunks: only %d queues of chunk 0 of %d", n, inFirst, len(names))
		}
	}
	if moveRank("emails") == moveRank("images") {
		t.Fatal("two names with one rank")
	}
}

// Reassign refuses an assignment its loads do not describe: a queue held
// by a member the Placer does not know, or a queue of a member gone that
// the registry does not list.
func TestReassignRefusesWhatItCannotStandFor(t *testing.T) {
	lookup := func(name string) (Queue, bool) { return Queue{Name: name}, name != "unlisted" }
	p := NewPlacer([]Member{{Name: "a"}, {Name: "b"}}, map[string]int64{"a": 1, "b": 1})
	if _, _, ok := p.Reassign([]Member{{Name: "a"}, {Name: "b"}, {Name: "c"}}, map[string]string{"q1": "a", "q2": "b", "q3": "c"}, lookup, 1); ok {
		t.Fatal("reassigned a queue held by a member whose load the placer does not track")
	}
	if _, _, ok := p.Reassign([]Member{{Name: "a"}}, map[string]string{"q1": "a", "unlisted": "b"}, lookup, 1); ok {
		t.Fatal("placed a queue the registry does not list")
	}
	if _, _, ok := p.Reassign([]Member{{Name: "a", Tags: []string{"gpu"}}}, map[string]string{"q1": "a", "q2": "b"}, lookup, 1); ok {
		t.Fatal("reassigned onto a member offering tags")
	}
	moved, _, ok := p.Reassign([]Member{{Name: "a"}}, map[string]string{"q1": "a", "q2": "b"}, lookup, 1)
	if !ok || moved["q2"] != "a" || len(moved) != 1 {
		t.Fatalf("b left: want q2 on a, have %v (ok %v)", moved, ok)
	}
}
