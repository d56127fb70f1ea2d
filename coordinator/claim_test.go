package coordinator

import (
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

func TestClaimCommitRelease(t *testing.T) {
	t.Parallel()
	zk := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	a, b := connect(t, zk.Addrs, root), connect(t, zk.Addrs, root)
	ctx := ctxT(t)

	ca, err := a.Claims().Claim(ctx, "emails", Owner{Member: "a", Generation: 1})
	if err != nil {
		t.Fatalf("claim by a: %v", err)
	}
	if got := ca.Offset().Position; got != 0 {
		t.Fatalf("offset of a new queue: want 0, have %d", got)
	}
	_, err = b.Claims().Claim(ctx, "emails", Owner{Member: "b", Generation: 1})
	mustIs(t, err, drover.ErrNotOwner, "claim of an owned queue")

	for pos := int64(1); pos <= 3; pos++ {
		if err := ca.Commit(ctx, offsetAt(pos*10, "a")); err != nil {
			t.Fatalf("commit %d: %v", pos, err)
		}
	}
	on, err := b.Claims().Offset(ctx, "emails")
	if err != nil || on.Offset.Position != 30 {
		t.Fatalf("offset after commits: want 30, have %+v (%v)", on, err)
	}
	owner, err := b.Claims().Owner(ctx, "emails")
	if err != nil || owner.Owner.Member != "a" || owner.Session != a.SessionID() {
		t.Fatalf("owner: want a in session %#x, have %+v (%v)", a.SessionID(), owner, err)
	}

	released := make(chan error, 1)
	go func() { released <- b.Claims().WaitReleased(ctx, "emails") }()
	if err := ca.Release(ctx, offsetAt(40, "a")); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := <-released; err != nil {
		t.Fatalf("wait released: %v", err)
	}
	mustIs(t, ca.Commit(ctx, offsetAt(50, "a")), drover.ErrNotOwner, "commit after release")

	cb, err := b.Claims().Claim(ctx, "emails", Owner{Member: "b", Generation: 2})
	if err != nil {
		t.Fatalf("claim by b after release: %v", err)
	}
	if got := cb.Offset().Position; got != 40 {
		t.Fatalf("b's claimed offset: want 40 (a's final), have %d", got)
	}
	if _, err := b.Claims().Owner(ctx, "nothing"); !errorsIsNotFound(err) {
		t.Fatalf("owner of an unowned queue: want ErrNotFound, have %v", err)
	}
}

func errorsIsNotFound(err error) bool { return errorsIs(err, drover.ErrNotFound) }

// A claim says when it ends (Done, Err): open while held, closed once it is
// released or fenced, so that whoever claimed the queue learns that it is
// lost without a report that could be dropped.
func TestClaimDoneWhenReleasedOrFenced(t *testing.T) {
	t.Parallel()
	zk := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	a := connect(t, zk.Addrs, root)
	ctx := ctxT(t)
	ended := func(c *Claim) bool {
		select {
		case <-c.Done():
			return true
		default:
			return false
		}
	}

	released, err := a.Claims().Claim(ctx, "r", Owner{Member: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if ended(released) || released.Err() != nil {
		t.Fatalf("a held claim: want Done open and Err nil, have %v", released.Err())
	}
	if err := released.Release(ctx, offsetAt(1, "a")); err != nil {
		t.Fatal(err)
	}
	if !ended(released) {
		t.Fatal("a released claim: want Done closed")
	}
	mustIs(t, released.Err(), drover.ErrNotOwner, "Err of a released claim")

	fenced, err := a.Claims().Claim(ctx, "f", Owner{Member: "a"})
	if err != nil {
		t.Fatal(err)
	}
	// An operator resets the owned queue's offset: the next commit is refused.
	if _, err := a.Claims().ResetOffset(ctx, "f", offsetAt(0, "op"), ResetOptions{AllowOwned: true}); err != nil {
		t.Fatal(err)
	}
	mustIs(t, fenced.Commit(ctx, offsetAt(2, "a")), drover.ErrFenced, "commit after a reset")
	if !ended(fenced) {
		t.Fatal("a fenced claim: want Done closed")
	}
	mustIs(t, fenced.Err(), drover.ErrFenced, "Err of a fenced claim")
}

// A claim makes its Done channel only when asked (a worker holds a claim
// per owned queue and never asks): one asked for first after the claim
// ended is closed already, and the claim's paths still fence its writes.
func TestClaimDoneAskedAfterTheEnd(t *testing.T) {
	t.Parallel()
	zk := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	a, b := connect(t, zk.Addrs, root), connect(t, zk.Addrs, root)
	ctx := ctxT(t)
	c, err := a.Claims().Claim(ctx, "late", Owner{Member: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx, offsetAt(5, "a")); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := c.Release(ctx, offsetAt(7, "a")); err != nil {
		t.Fatalf("release: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done asked for after the release: want it closed")
	}
	on, err := b.Claims().Offset(ctx, "late")
	if err != nil || on.Offset.Position != 7 {
		t.Fatalf("offset after the release: want 7, have %+v (%v)", on, err)
	}
	if _, err := b.Claims().Owner(ctx, "late"); !errorsIsNotFound(err) {
		t.Fatalf("owner after the release: want none, have %v", err)
	}
}
