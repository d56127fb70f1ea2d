package coordinator

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// A claim reports its end to one callback, once, however many writes see
// the fence after it (the reconciler learns of a lost queue without a
// goroutine per claim); a callback set after the end is called at once.
func TestClaimOnEndReportsTheFenceOnce(t *testing.T) {
	t.Parallel()
	zk := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	a := connect(t, zk.Addrs, root)
	ctx := ctxT(t)
	c, err := a.Claims().Claim(ctx, "f", Owner{Member: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	ended := make(chan struct{}, 4)
	c.OnEnd(func() { calls.Add(1); ended <- struct{}{} })
	if err := c.Commit(ctx, offsetAt(1, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Claims().ResetOffset(ctx, "f", offsetAt(0, "op"), ResetOptions{AllowOwned: true}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		mustIs(t, c.Commit(ctx, offsetAt(2, "a")), drover.ErrFenced, "commit after a reset")
	}
	select {
	case <-ended:
	case <-time.After(testkit.Bound):
		t.Fatal("the fence was not reported to OnEnd's callback")
	}
	late := make(chan struct{})
	c.OnEnd(func() { close(late) })
	select {
	case <-late:
	case <-time.After(testkit.Bound):
		t.Fatal("a callback set after the end was not called")
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the first callback was called %d times; want once", n)
	}
}
