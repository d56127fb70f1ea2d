package fleet

import (
	"context"
	"errors"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// A queue's loss is reported once (issue 32): the runner holds the
// session's claim itself (it commits straight through it, no wrapper of
// the reconciler's in between), the claim reports its own end to the
// reconciler once however many of the runner's calls see the fence, and
// the reconciler aborts the queue once and claims it again once.
func TestALostClaimIsReportedOnce(t *testing.T) {
	rr := startReconciler(t)
	rr.s.assign(1, mine("q"))
	rr.owning(t, "q")
	first := rr.s.owner("q")
	rr.r.mu.Lock()
	held := rr.r.running["q"]
	rr.r.mu.Unlock()
	if held != drover.Claim(first) {
		t.Fatalf("the runner holds %T; want the session's own claim", held)
	}
	first.fence()
	// A commit refused, then two more calls that see the end, all through
	// the claim the runner held (once the first is refused the reconciler
	// may abort and claim q again at once, so the runner's current claim
	// is not the one to ask).
	for range 3 {
		if err := held.Commit(context.Background(), drover.Offset{Position: 1}); !errors.Is(err, drover.ErrFenced) {
			t.Fatalf("want the commit fenced, have %v", err)
		}
	}
	testkit.Eventually(t, "q claimed again", func() bool {
		return rr.s.claimCount("q") == 2 && rr.r.count(rr.r.starts, "q") == 2
	})
	// A later generation applied: the reconciler has taken every report
	// sent before it.
	rr.s.assign(2, mine("q"))
	testkit.Eventually(t, "generation 2 applied", func() bool { return <-rr.gens == 2 })
	if n := first.endReports(); n != 1 {
		t.Fatalf("the lost claim reported its end %d times; want once", n)
	}
	if n := rr.r.count(rr.r.aborts, "q"); n != 1 {
		t.Fatalf("want q aborted once, have %d", n)
	}
	if c, s := rr.s.claimCount("q"), rr.r.count(rr.r.starts, "q"); c != 2 || s != 2 {
		t.Fatalf("want q claimed and started twice (once again after the loss), have %d claims, %d starts", c, s)
	}
}

// A claim the runner released (a graceful stop: the queue moved away)
// ends too, and is not reported as lost: the queue is not claimed again.
func TestAReleasedClaimIsNotReportedLost(t *testing.T) {
	rr := startReconciler(t)
	rr.s.assign(1, mine("a", "b"))
	rr.owning(t, "a", "b")
	a := rr.s.owner("a")
	rr.s.assign(2, mine("b"))
	rr.owning(t, "b")
	testkit.Eventually(t, "a's end reported to the reconciler", func() bool { return a.endReports() == 1 })
	rr.s.assign(3, mine("b"))
	testkit.Eventually(t, "generation 3 applied", func() bool { return <-rr.gens == 3 })
	if n := rr.s.claimCount("a"); n != 1 {
		t.Fatalf("a released: want it claimed once, have %d", n)
	}
	if n := rr.r.count(rr.r.aborts, "a"); n != 0 {
		t.Fatalf("a released: want no abort, have %d", n)
	}
}
