package fleet

import (
	"fmt"
	"testing"
)

// TestRemovalsWaitWhileKeysArePlaced: queues removed from the registry
// while new ones are placed stay assigned in the placements' write, and
// go out in one write once the first has waited removalsEvery on the
// clock; a queue registered again meanwhile is never removed and stays
// with its owner. Before, every placing window wrote its removals with
// it: a share's chunks rewritten about once a second while a family
// churned.
func TestRemovalsWaitWhileKeysArePlaced(t *testing.T) {
	var names []string
	for i := range 60 {
		names = append(names, fmt.Sprintf("q%02d", i))
	}
	cr := startChurn(t, nil, true)
	cr.s.members <- members("a", "b", "c")
	cr.registry(registryOf(names))
	first := cr.written(t, 1)

	gone := map[string]bool{"q01": true, "q02": true, "q03": true, "q11": true, "q12": true, "q13": true}
	next := append(without(names, gone), "new1", "new2")
	cr.registry(registryOf(next))
	a := cr.written(t, 2)
	for _, q := range []string{"new1", "new2"} {
		if _, ok := a.Queues[q]; !ok {
			t.Fatalf("the placements' write lacks %s", q)
		}
	}
	for q := range gone {
		if _, ok := a.Queues[q]; !ok {
			t.Fatalf("the placements' write removed %s: removals should wait while keys are placed", q)
		}
	}
	if _, _, removed := cr.counts(); removed != 0 {
		t.Fatalf("%d queues removed with the placements", removed)
	}

	// q12 comes back (an enqueue registered it again) with another new
	// key, before the removals are due.
	cr.registry(registryOf(append(next, "q12", "new3")))
	b := cr.written(t, 3)
	if _, ok := b.Queues["new3"]; !ok {
		t.Fatal("the third write lacks new3")
	}

	// The clock passes removalsEvery: the removals go out, all but q12.
	c := cr.written(t, 4)
	for q := range gone {
		_, held := c.Queues[q]
		if q == "q12" {
			if !held || c.Queues[q] != first.Queues[q] {
				t.Fatalf("q12, registered again, is %q in the removals' write, want it kept on %q", c.Queues[q], first.Queues[q])
			}
			continue
		}
		if held {
			t.Fatalf("the removals' write still holds %s", q)
		}
	}
	cr.await(t, 0, 5)
	if whole, _, removed := cr.counts(); whole != 1 || removed != 5 {
		t.Fatalf("want 5 removed without computing and 1 whole computation, have %d removed, %d whole", removed, whole)
	}
}
