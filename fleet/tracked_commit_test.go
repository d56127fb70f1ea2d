package fleet

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/drover-dev/drover"
)

// batchFakeClaim is a fakeClaim that commits through a shared committer.
type batchFakeClaim struct {
	*fakeClaim
	cm *recordingCommitter
}

func (c *batchFakeClaim) Committer() drover.ClaimCommitter { return c.cm }

// recordingCommitter commits each request through its claim's Commit and
// records the claims it was handed.
type recordingCommitter struct{ got []drover.Claim }

func (r *recordingCommitter) CommitMany(ctx context.Context, reqs []drover.CommitRequest) []error {
	errs := make([]error, len(reqs))
	for i, q := range reqs {
		r.got = append(r.got, q.Claim)
		errs[i] = q.Claim.Commit(ctx, q.Offset)
	}
	return errs
}

// The runner's claims (trackedClaim) commit in batches when their store's
// claims do: one session's claims share one committer, the store's
// committer gets the store's claims, and a claim the batch found fenced is
// reported to the reconciler as a lone Commit's would be. A claim that
// cannot batch gives no committer.
func TestTrackedClaimsCommitInBatches(t *testing.T) {
	s := newFakeSession()
	cm := &recordingCommitter{}
	ended := &endedClaims{signal: make(chan struct{}, 1)}
	var tracked []*trackedClaim
	var inner []*fakeClaim
	for i := range 3 {
		fc := &fakeClaim{s: s, queue: fmt.Sprintf("q%d", i), done: make(chan struct{})}
		inner = append(inner, fc)
		tracked = append(tracked, &trackedClaim{Claim: &batchFakeClaim{fakeClaim: fc, cm: cm}, queue: fc.queue, ended: ended})
	}
	inner[1].fence()
	k := tracked[0].Committer()
	if k == nil || k != tracked[2].Committer() {
		t.Fatalf("committers of one store's claims: want equal and set, have %v and %v", k, tracked[2].Committer())
	}
	var reqs []drover.CommitRequest
	for _, tc := range tracked {
		reqs = append(reqs, drover.CommitRequest{Claim: tc, Offset: drover.Offset{Position: 7}})
	}
	errs := k.CommitMany(context.Background(), reqs)
	if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], drover.ErrFenced) {
		t.Fatalf("errors: want q1 fenced alone, have %v", errs)
	}
	for i, c := range cm.got {
		if c != tracked[i].Claim {
			t.Fatalf("the store's committer got %T for request %d; want the store's own claim", c, i)
		}
	}
	if got := ended.take(); len(got) != 1 || got[0] != tracked[1] {
		t.Fatalf("claims reported ended: want q1 alone, have %v", got)
	}
	plain := &trackedClaim{Claim: &fakeClaim{s: s, queue: "plain", done: make(chan struct{})}, queue: "plain", ended: ended}
	if c := plain.Committer(); c != nil {
		t.Fatalf("a claim that cannot batch: want no committer, have %v", c)
	}
}
