package coordinator

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// Commits of several queues go to ZooKeeper as one multi; when one queue
// was fenced out (an operator reset its offset while it was owned), that
// queue's commit fails alone and the others are applied.
func TestCoalescedCommitDropsAFencedQueueAlone(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	claims := map[string]*Claim{}
	for _, q := range []string{"q1", "q2", "q3"} {
		c, err := s.Claims().Claim(ctx, q, Owner{Member: "m"})
		if err != nil {
			t.Fatalf("claim %s: %v", q, err)
		}
		claims[q] = c
	}
	if _, err := admin.Claims().ResetOffset(ctx, "q2", offsetAt(0, "operator"), ResetOptions{AllowOwned: true}); err != nil {
		t.Fatalf("reset q2: %v", err)
	}

	// One batch, the fenced queue in the middle.
	var reqs []*multiReq
	for i, q := range []string{"q1", "q2", "q3"} {
		data, _ := json.Marshal(offsetAt(int64(10*(i+1)), "m"))
		reqs = append(reqs, &multiReq{ops: claims[q].ops(data, false)})
	}
	before := s.batch.flushes
	s.batch.flush(ctx, reqs)
	if reqs[0].err != nil || reqs[2].err != nil {
		t.Fatalf("commits of q1 and q3: want applied, have %v and %v", reqs[0].err, reqs[2].err)
	}
	if !isVersionConflict(reqs[1].err) {
		t.Fatalf("commit of the fenced q2: want a version conflict, have %v", reqs[1].err)
	}
	if n := s.batch.flushes - before; n != 2 {
		t.Fatalf("multis for a batch with one fenced queue: want 2 (the failed one, then the rest), have %d", n)
	}
	for q, want := range map[string]drover.Position{"q1": 10, "q3": 30, "q2": 0} {
		on, err := admin.Claims().Offset(ctx, q)
		if err != nil || on.Offset.Position != want {
			t.Fatalf("offset of %s: want %d, have %+v (%v)", q, want, on.Offset, err)
		}
	}
}

// Through Claim.Commit, concurrent commits of many queues all land, and a
// fenced one fails with ErrFenced without failing the others.
func TestConcurrentCommitsWithOneFencedQueue(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	var claims []*Claim
	for i := range 20 {
		c, err := s.Claims().Claim(ctx, fmt.Sprintf("q%02d", i), Owner{Member: "m"})
		if err != nil {
			t.Fatal(err)
		}
		claims = append(claims, c)
	}
	if _, err := admin.Claims().ResetOffset(ctx, "q07", offsetAt(0, "operator"), ResetOptions{AllowOwned: true}); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, len(claims))
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Commit(ctx, offsetAt(100, "m"))
		}()
	}
	wg.Wait()
	wantFencedAlone(t, errs, 7, "")
	if err := claims[3].Commit(ctx, offsetAt(101, "m")); err != nil {
		t.Fatalf("a later commit of q03: %v", err)
	}
}
