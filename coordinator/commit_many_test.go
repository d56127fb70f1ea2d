package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// claimN claims queues q00… for member m on s.
func claimN(t *testing.T, s *Session, n int) []*Claim {
	t.Helper()
	var claims []*Claim
	for i := range n {
		c, err := s.Claims().Claim(ctxT(t), fmt.Sprintf("q%02d", i), Owner{Member: "m"})
		if err != nil {
			t.Fatalf("claim q%02d: %v", i, err)
		}
		claims = append(claims, c)
	}
	return claims
}

// commitAll asks CommitMany to commit every claim at pos.
func commitAll(ctx context.Context, s *Session, claims []*Claim, pos int64) []error {
	reqs := make([]drover.CommitRequest, len(claims))
	for i, c := range claims {
		reqs[i] = drover.CommitRequest{Claim: c, Offset: offsetAt(pos, "m")}
	}
	return s.Claims().CommitMany(ctx, reqs)
}

// wantFencedAlone fails unless the commit of q<fenced> was refused as
// fenced and every other commit of errs (one per queue q00, q01, …)
// succeeded; when adds to the failure messages.
func wantFencedAlone(t *testing.T, errs []error, fenced int, when string) {
	t.Helper()
	for i, err := range errs {
		if i == fenced {
			mustIs(t, err, drover.ErrFenced, fmt.Sprintf("commit of the fenced q%02d%s", i, when))
			continue
		}
		if err != nil {
			t.Fatalf("commit of q%02d%s: %v", i, when, err)
		}
	}
}

// wantOffsets fails unless every queue but skip is at pos.
func wantOffsets(t *testing.T, s *Session, claims []*Claim, pos drover.Position, skip int) {
	t.Helper()
	for i, c := range claims {
		if i == skip {
			continue
		}
		on, err := s.Claims().Offset(ctxT(t), c.Queue())
		if err != nil || on.Offset.Position != pos {
			t.Fatalf("offset of %s: want %d, have %+v (%v)", c.Queue(), pos, on.Offset, err)
		}
	}
}

// A commit multi where one queue was fenced out (an operator reset its
// offset while it was owned): that queue's commit fails with ErrFenced and
// its claim ends; the others are applied, in one more multi.
func TestCommitManyDropsAFencedQueueAlone(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	claims := claimN(t, s, 5)
	if _, err := admin.Claims().ResetOffset(ctx, "q02", offsetAt(0, "operator"), ResetOptions{AllowOwned: true}); err != nil {
		t.Fatalf("reset q02: %v", err)
	}
	before := s.batch.flushes
	errs := commitAll(ctx, s, claims, 10)
	wantFencedAlone(t, errs, 2, "")
	if n := s.batch.flushes - before; n != 2 {
		t.Fatalf("multis for a batch with one fenced queue: want 2 (the failed one, then the rest), have %d", n)
	}
	wantOffsets(t, admin, claims, 10, 2)
	if on, _ := admin.Claims().Offset(ctx, "q02"); on.Offset.Position != 0 {
		t.Fatalf("the fenced q02 moved: %+v", on.Offset)
	}
	mustIs(t, claims[2].Err(), drover.ErrFenced, "the fenced claim's Err")
	// The fenced claim stays out of later batches; the others go on.
	errs = commitAll(ctx, s, claims, 11)
	mustIs(t, errs[2], drover.ErrFenced, "a later commit of the fenced q02")
	for i, err := range errs {
		if i != 2 && err != nil {
			t.Fatalf("a later commit of q%02d: %v", i, err)
		}
	}
	wantOffsets(t, admin, claims, 11, 2)
}

// A batch's reply lost with the connection (applied or not): every claim
// re-reads its offset, as Claim.Commit does, and each commit ends applied
// exactly once; a fenced queue in that batch is found fenced by its
// re-read and is the only one to fail.
func TestCommitManyLostReplyIsSettledByReRead(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, fc := connectFaulty(t, server.Addrs, root)
	admin := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	claims := claimN(t, s, 4)
	pos := int64(10)
	for _, apply := range []bool{true, false} {
		before := make([]OffsetNode, len(claims))
		for i, c := range claims {
			before[i], _ = admin.Claims().Offset(ctx, c.Queue())
		}
		fc.lose(1, apply)
		for i, err := range commitAll(ctx, s, claims, pos) {
			if err != nil {
				t.Fatalf("applied=%v: commit of q%02d with a lost reply: %v", apply, i, err)
			}
		}
		for i, c := range claims {
			on, err := admin.Claims().Offset(ctx, c.Queue())
			if err != nil || on.Offset.Position != drover.Position(pos) || on.Version != before[i].Version+1 {
				t.Fatalf("applied=%v: %s: want position %d at version %d, have %+v (%v)", apply, c.Queue(), pos, before[i].Version+1, on, err)
			}
		}
		pos++
	}
	// Lost, and one queue of the batch fenced meanwhile.
	if _, err := admin.Claims().ResetOffset(ctx, "q01", offsetAt(0, "operator"), ResetOptions{AllowOwned: true}); err != nil {
		t.Fatal(err)
	}
	fc.lose(1, true)
	errs := commitAll(ctx, s, claims, pos)
	wantFencedAlone(t, errs, 1, " after a lost reply")
	wantOffsets(t, admin, claims, drover.Position(pos), 1)

	// The reply lost and ctx ended: the outcome is unknown, reported as
	// such, and the next commit settles it first.
	fc.lose(1, true)
	live := []*Claim{claims[0], claims[2]}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, err := range commitAll(cctx, s, live, pos+1) {
		if err == nil || errors.Is(err, drover.ErrFenced) {
			t.Fatalf("commit with ctx ended: want not sent or outcome unknown, have %v", err)
		}
	}
	for i, err := range commitAll(ctx, s, live, pos+2) {
		if err != nil {
			t.Fatalf("commit after ctx ended, claim %d: %v", i, err)
		}
	}
	wantOffsets(t, admin, live, drover.Position(pos+2), -1)
}

// A batch larger than one multi's bound is split: every part is one multi
// under the bound, and every queue commits.
func TestCommitManySplitsAtTheRequestBound(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	claims := claimN(t, s, 10)
	// One offset for every queue, measured and sent alike: offsetAt's
	// clock time encodes in 1 to 3 millisecond digits (RFC 3339 drops
	// trailing zeros), so a second offsetAt may not fit three to a multi.
	off := drover.Offset{Position: 10, CommittedAt: time.Date(2026, 11, 24, 12, 0, 0, 123e6, time.UTC), Member: "m"}
	one := 0
	for _, op := range claims[0].ops(mustJSON(off), false) {
		one += opSize(op)
	}
	s.batch.commitBytes = 3 * one // three queues a multi
	before := s.batch.flushes
	reqs := make([]drover.CommitRequest, len(claims))
	for i, c := range claims {
		reqs[i] = drover.CommitRequest{Claim: c, Offset: off}
	}
	for i, err := range s.Claims().CommitMany(ctx, reqs) {
		if err != nil {
			t.Fatalf("commit of q%02d: %v", i, err)
		}
	}
	if n := s.batch.flushes - before; n != 4 {
		t.Fatalf("multis for 10 queues at 3 a multi: want 4, have %d", n)
	}
	wantOffsets(t, admin, claims, 10, -1)
}

// Requests CommitMany cannot take get an error of their own and write
// nothing; the others commit.
func TestCommitManyCommitsForeignClaimsAloneAndRefusesRepeatedOnes(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, other := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	claims := claimN(t, s, 2)
	mine, wrapped := claims[0], &countingClaim{Claim: claims[1]}
	theirs, err := other.Claims().Claim(ctx, "theirs", Owner{Member: "o"})
	if err != nil {
		t.Fatal(err)
	}
	errs := s.Claims().CommitMany(ctx, []drover.CommitRequest{
		{Claim: mine, Offset: offsetAt(5, "m")},
		{Claim: theirs, Offset: offsetAt(7, "m")},
		{Claim: mine, Offset: offsetAt(6, "m")},
		{Claim: wrapped, Offset: offsetAt(8, "m")},
		{Claim: (*Claim)(nil), Offset: offsetAt(9, "m")},
	})
	for i, what := range []string{"the session's own claim", "a claim of another session", "", "a wrapper of the session's claim"} {
		if what != "" && errs[i] != nil {
			t.Fatalf("commit of %s: %v", what, errs[i])
		}
	}
	mustIs(t, errs[2], drover.ErrInvalidConfig, "a claim twice in one batch")
	mustIs(t, errs[4], drover.ErrInvalidConfig, "a nil claim")
	// A wrapper embedding *Claim inherits Committer, so the worker batches
	// it: its own Commit must run (refused, it was never committed).
	if n := wrapped.commits.Load(); n != 1 {
		t.Fatalf("the wrapper's Commit ran %d times; want 1", n)
	}
	if on, _ := other.Claims().Offset(ctx, "theirs"); on.Offset.Position != 7 {
		t.Fatalf("the other session's claim, committed through its own Commit: offset %+v, want 7", on.Offset)
	}
	if on, _ := s.Claims().Offset(ctx, claims[1].Queue()); on.Offset.Position != 8 {
		t.Fatalf("the wrapped claim: offset %+v, want 8", on.Offset)
	}
	wantOffsets(t, s, []*Claim{mine}, 5, -1)
}

// countingClaim wraps a *Claim as a caller outside the package might (the
// bench's commit-watching claim): embedding promotes Committer.
type countingClaim struct {
	*Claim
	commits atomic.Int32
}

func (c *countingClaim) Commit(ctx context.Context, off drover.Offset) error {
	c.commits.Add(1)
	return c.Claim.Commit(ctx, off)
}
