package rebalance

import (
	"fmt"
	"maps"
	"math/rand"
	"testing"
)

// TestPlacerPlacesAsStickyWould checks the Placer against Sticky on random
// fleets without tags: the queues it places beside a sticky assignment go
// where Sticky, computed over the old assignment and every queue, puts
// them, and Sticky computed again over the result moves nothing.
func TestPlacerPlacesAsStickyWould(t *testing.T) {
	r := rand.New(rand.NewSource(*seedFlag))
	for n := range 400 {
		weights := n%2 == 1
		members := make([]Member, 1+r.Intn(12))
		for i := range members {
			members[i] = Member{Name: fmt.Sprintf("m%02d", i), Capacity: 1 + r.Intn(4)*r.Intn(2)}
		}
		queue := func(i int) Queue {
			q := Queue{Name: fmt.Sprintf("q%05d", i)}
			if weights {
				q.Weight = 1 + r.Intn(5)
			}
			return q
		}
		old := make([]Queue, r.Intn(300))
		for i := range old {
			old[i] = queue(i)
		}
		prev := mustAssign(t, Sticky{}, Input{Members: members, Queues: old})
		load := map[string]int64{}
		for _, q := range old {
			load[prev.Queues[q.Name]] += Weight(q)
		}
		added := make([]Queue, 1+r.Intn(200))
		for i := range added {
			added[i] = queue(len(old) + i)
		}
		p := NewPlacer(members, load)
		if p == nil {
			t.Fatalf("case %d: no placer for members without tags", n)
		}
		placed, ok := p.Place(added)
		if !ok {
			t.Fatalf("case %d: untagged queues refused", n)
		}
		merged := maps.Clone(prev.Queues)
		maps.Copy(merged, placed)
		all := append(old, added...)
		label := fmt.Sprintf("case %d (%d members, %d + %d queues, weights %v)", n, len(members), len(old), len(added), weights)
		if !weights {
			// Unit weights: exactly Sticky's placement.
			want := mustAssign(t, Sticky{}, Input{Previous: prev.Queues, Members: members, Queues: all})
			if !maps.Equal(want.Queues, merged) {
				t.Fatalf("%s: placed differently from Sticky", label)
			}
		}
		again := mustAssign(t, Sticky{}, Input{Previous: merged, Members: members, Queues: all})
		if moved := len(Moves(merged, again.Queues)); moved != 0 {
			t.Fatalf("%s: Sticky moves %d queues of the placement", label, moved)
		}
		checkStickyBound(t, label, Input{Members: members, Queues: all}, Result{Queues: merged})
	}
}

func TestPlacerRefusesTags(t *testing.T) {
	if NewPlacer([]Member{{Name: "a", Tags: []string{"gpu"}}, {Name: "b"}}, nil) != nil {
		t.Fatal("a placer for a member offering tags")
	}
	p := NewPlacer([]Member{{Name: "a"}, {Name: "b"}}, map[string]int64{"a": 3})
	if _, ok := p.Place([]Queue{{Name: "x"}, {Name: "y", Tags: []string{"gpu"}}}); ok {
		t.Fatal("placed a queue that requires tags")
	}
	got, ok := p.Place([]Queue{{Name: "x"}, {Name: "y"}})
	if !ok || got["x"] != "b" || got["y"] != "b" {
		t.Fatalf("placed %v (ok %v), want both on b, the lighter member", got, ok)
	}
}
