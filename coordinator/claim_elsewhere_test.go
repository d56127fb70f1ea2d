package coordinator

import (
	"errors"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// A claim refused by another session's owner node says so
// (ErrOwnedElsewhere), so that the claimant skips looking for an orphan of
// its own (issue 43: a request per contended claim at a join); one
// refused by this session's own node does not, so that the orphan is
// dropped.
func TestAClaimSaysWhoseOwnerNodeRefusedIt(t *testing.T) {
	t.Parallel()
	zk := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	a, b := connect(t, zk.Addrs, root), connect(t, zk.Addrs, root)
	ctx := ctxT(t)
	if _, err := a.Claims().Claim(ctx, "held", Owner{Member: "a", Generation: 1}); err != nil {
		t.Fatalf("claim by a: %v", err)
	}
	_, err := b.Claims().Claim(ctx, "held", Owner{Member: "b", Generation: 1})
	if !errors.Is(err, drover.ErrNotOwner) || !errors.Is(err, ErrOwnedElsewhere) {
		t.Fatalf("claim of a queue another session owns: want ErrNotOwner and ErrOwnedElsewhere, have %v", err)
	}
	// a's own node, its Claim forgotten (an orphan): not elsewhere.
	_, err = a.Claims().Claim(ctx, "held", Owner{Member: "a", Generation: 2})
	if !errors.Is(err, drover.ErrNotOwner) || errors.Is(err, ErrOwnedElsewhere) {
		t.Fatalf("claim of a queue this session's node holds: want ErrNotOwner without ErrOwnedElsewhere, have %v", err)
	}
	if dropped, err := a.Claims().DropOwnOrphan(ctx, "held"); err != nil || !dropped {
		t.Fatalf("drop a's orphan: dropped %v (%v), want true", dropped, err)
	}
}
