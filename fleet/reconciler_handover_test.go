package fleet

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// holdStops makes the fake runner's stops wait (tasks running) until the
// test's cleanup, or a cut, or the session's loss.
func holdStops(t *testing.T, rr *reconcilerRun) chan struct{} {
	t.Helper()
	drain := make(chan struct{})
	rr.r.mu.Lock()
	rr.r.drain = drain
	rr.r.mu.Unlock()
	t.Cleanup(func() {
		select {
		case <-drain:
		default:
			close(drain) // before the reconciler's cleanup waits for it
		}
	})
	return drain
}

// stopKindsAre waits until q's Stop calls are exactly want, in order.
func stopKindsAre(t *testing.T, rr *reconcilerRun, q string, want ...drover.StopKind) {
	t.Helper()
	testkit.Eventually(t, "the stops of "+q+" to be "+kindsString(want), func() bool {
		return slices.Equal(rr.r.stopKinds(q), want)
	})
}

func kindsString(ks []drover.StopKind) string {
	s := "["
	for i, k := range ks {
		if i > 0 {
			s += " "
		}
		s += k.String()
	}
	return s + "]"
}

// Issue 40: a queue a new target takes away while this member stays is a
// planned move: the runner is asked for a planned stop (its tasks finish
// under their own timeouts), and the owner node stays until it is done.
// Leaving meanwhile cuts that stop to the drain timeout (a leave of the same
// queue), and every queue still owned leaves with the drain timeout. Before,
// every stop was a drain bounded by the drain timeout.
func TestAMoveAwayIsAPlannedStopThatALeaveCuts(t *testing.T) {
	rr := startReconciler(t)
	rr.s.assign(1, mine("a", "b"))
	rr.owning(t, "a", "b")
	drain := holdStops(t, rr)
	rr.s.assign(2, map[string]string{"a": "other", "b": "me"})
	stopKindsAre(t, rr, "a", drover.StopPlanned)
	if rr.s.owner("a") == nil {
		t.Fatal("a's owner node went before its planned stop ended: the next owner could start beside its running task")
	}
	rr.cancel() // the member leaves
	stopKindsAre(t, rr, "a", drover.StopPlanned, drover.StopLeave)
	stopKindsAre(t, rr, "b", drover.StopLeave)
	testkit.Eventually(t, "a's planned stop cut by the leave", func() bool { return rr.r.count(rr.r.handoversCut, "a") == 1 })
	close(drain) // b's drain ends
	if err := <-rr.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, have %v", err)
	}
	rr.done <- nil // for the cleanup
	if rr.s.owner("a") != nil {
		t.Fatal("want a's owner node released once its cut stop ended")
	}
}

// Issue 40: a member giving its queues up (leaving, or cut off from Redis:
// ReconcilerConfig.GivingUp) is not moving them for balance: a queue a new
// target takes away then is stopped with the drain timeout, and the planned
// stops still waiting are cut to it.
func TestAMemberGivingItsQueuesUpStopsThemWithTheDrainTimeout(t *testing.T) {
	var givingUp atomic.Bool
	rr := startReconciler(t, func(c *ReconcilerConfig) { c.GivingUp = givingUp.Load })
	rr.s.assign(1, mine("a", "b", "c"))
	rr.owning(t, "a", "b", "c")
	holdStops(t, rr)
	rr.s.assign(2, map[string]string{"a": "other", "b": "me", "c": "me"})
	stopKindsAre(t, rr, "a", drover.StopPlanned)
	givingUp.Store(true) // Redis unreachable: the leader takes every queue away
	rr.s.assign(3, map[string]string{"a": "other", "b": "other", "c": "other"})
	stopKindsAre(t, rr, "a", drover.StopPlanned, drover.StopLeave)
	for _, q := range []string{"b", "c"} {
		stopKindsAre(t, rr, q, drover.StopLeave)
	}
	testkit.Eventually(t, "a's planned stop cut", func() bool { return rr.r.count(rr.r.handoversCut, "a") == 1 })
}

// Issue 40: a queue that comes back to this member while its planned stop
// still waits for a task is claimed again only once that stop has released
// it: never two loops of one queue, and it runs on from the offset the stop
// released.
func TestAQueueBackBeforeItsPlannedStopEndedIsClaimedAfterIt(t *testing.T) {
	rr := startReconciler(t)
	rr.s.assign(1, mine("a"))
	rr.owning(t, "a")
	first := rr.s.owner("a")
	drain := holdStops(t, rr)
	rr.s.assign(2, map[string]string{"a": "other"})
	stopKindsAre(t, rr, "a", drover.StopPlanned)
	rr.s.assign(3, mine("a"))
	for g := <-rr.gens; g != 3; g = <-rr.gens {
	}
	close(drain) // the running task ends: the stop releases
	rr.owning(t, "a")
	testkit.Eventually(t, "a started again", func() bool { return rr.r.count(rr.r.starts, "a") == 2 })
	if !errors.Is(first.Err(), drover.ErrNotOwner) {
		t.Fatalf("want the first claim released, have %v", first.Err())
	}
	rr.r.mu.Lock()
	overlaps := rr.r.overlaps
	rr.r.mu.Unlock()
	if overlaps != 0 {
		t.Fatalf("a was started %d times while its previous claim still held", overlaps)
	}
	if n := rr.s.claimCount("a"); n != 2 {
		t.Fatalf("want a claimed twice (before and after the move), have %d", n)
	}
}
