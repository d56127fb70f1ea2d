package fleet

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/rebalance"
)

// TestRemovalsWaitWhileKeysArePlaced: queues removed from the registry
// while new ones are placed stay assigned in the placements' write, and
// go out in one write once the first has waited removalsEvery on the
// clock; a queue registered again meanwhile is never removed and stays
// with its owner. Before, every placing window wrote its removals with
// it: a share's chunks rewritten about once a second while a family
// churned.
func TestRemovalsWaitWhileKeysArePlaced(t *testing.T) {
	cr, names, first := startSixtyOnThree(t)

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

// TestRemovalsWaitWhileTheRegistrarPlacesKeys: in a churn the new keys are
// placed ahead of the registry watch, from the registrar, so the registry
// snapshots that remove retired keys add none the assignment lacks. The
// removals still wait while keys were placed less than removalsEvery ago,
// and are written at once on a fleet where nothing was placed for that
// long. (The first version of the rule looked only at the snapshot's own
// additions, and never waited in the churn bench.)
func TestRemovalsWaitWhileTheRegistrarPlacesKeys(t *testing.T) {
	f := newTwoMemberPlacement(200)
	p, w, lead, live, names := &f.p, f.w, f.lead, f.live, f.names
	log := testkit.Logger(t, hclog.Warn)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	fresh := []drover.QueueConfig{{Name: "new-1"}, {Name: "new-2"}}
	if err := p.placeCreated(ctx, t0, lead, w, live, registryOf(names), fresh, log); err != nil {
		t.Fatal(err)
	}
	// The watch lists the new keys and has lost ten retired ones.
	listed := append(slices.Clone(names[10:]), "new-1", "new-2")
	if handled, err := p.placeNew(ctx, t0.Add(time.Second), lead, w, live, registryOf(listed), log); !handled || err != nil {
		t.Fatalf("handled %v, %v", handled, err)
	}
	for _, q := range names[:10] {
		if _, ok := w.Current().Queues[q]; !ok {
			t.Fatalf("%s removed a second after keys were placed: removals should wait", q)
		}
	}
	// removalsEvery after the removals came, with nothing else: written.
	if handled, err := p.placeNew(ctx, t0.Add(time.Second+removalsEvery), lead, w, live, registryOf(listed), log); !handled || err != nil {
		t.Fatalf("handled %v, %v", handled, err)
	}
	for _, q := range names[:10] {
		if _, ok := w.Current().Queues[q]; ok {
			t.Fatalf("%s still assigned once its removal was due", q)
		}
	}
	// Nothing placed for longer than removalsEvery: a removal is at once.
	calm := slices.Clone(listed[1:])
	if handled, err := p.placeNew(ctx, t0.Add(time.Second+3*removalsEvery), lead, w, live, registryOf(calm), log); !handled || err != nil {
		t.Fatalf("handled %v, %v", handled, err)
	}
	if _, ok := w.Current().Queues[listed[0]]; ok {
		t.Fatalf("%s kept on a calm fleet: a removal with nothing placed is written at once", listed[0])
	}
}

// twoMemberPlacement is a placement on fakes: n queues cust-NNNNN
// assigned to a and b in turn, learned as the assignment in force.
type twoMemberPlacement struct {
	s        *fakeLeaderSession
	w        *fakeWriter
	lead     *fakeLeadership
	live     []rebalance.Member
	names    []string
	assigned map[string]string
	p        placement
}

func newTwoMemberPlacement(n int) *twoMemberPlacement {
	f := &twoMemberPlacement{s: newFakeLeaderSession(), lead: newFakeLeadership(nil), assigned: map[string]string{},
		live: []rebalance.Member{{Name: "a", Capacity: 1}, {Name: "b", Capacity: 1}}}
	f.w = &fakeWriter{s: f.s}
	for i := range n {
		q := fmt.Sprintf("cust-%05d", i)
		f.names = append(f.names, q)
		f.assigned[q] = []string{"a", "b"}[i%2]
	}
	f.s.current = drover.Assignment{Generation: 1, Queues: f.assigned}
	f.p.learn(rebalance.Sticky{}, f.live, registryOf(f.names), f.assigned)
	return f
}

// startSixtyOnThree starts a churn run (activity on, nothing busy) with
// queues q00–q59 on members a, b and c, and returns it with the names and
// the first assignment written.
func startSixtyOnThree(t *testing.T) (*churnRun, []string, drover.Assignment) {
	t.Helper()
	var names []string
	for i := range 60 {
		names = append(names, fmt.Sprintf("q%02d", i))
	}
	cr := startChurn(t, nil, true)
	cr.s.members <- members("a", "b", "c")
	cr.registry(registryOf(names))
	return cr, names, cr.written(t, 1)
}
