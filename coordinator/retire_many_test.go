package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// RetireMany deletes a thousand idle family queues' configs in a few
// packed multis (the registrar's sweep retires a second's idle keys at
// once; a multi per queue kept retirement near 100 a second), with the
// checks of Retire: a queue configured on its own or by another family is
// neither handed to empty nor deleted.
func TestRetireManyPacksAThousandQueuesIntoAFewMultis(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	var multis atomic.Int64
	s := connectWrapped(t, server.Addrs, testenv.Chroot(t), testTimeout, func(conn zkConn, cfg Config) zkConn {
		return &multiHook{zkConn: conn, before: func() { multis.Add(1) }}
	})
	ctx := ctxT(t)
	f := drover.FamilyConfig{Name: "cust", Prefix: "cust-"}
	var cfgs []drover.QueueConfig
	var cands []RetireCandidate
	for i := range 1000 {
		q := fmt.Sprintf("cust-%04d", i)
		cfgs = append(cfgs, f.QueueFor(q))
		cands = append(cands, RetireCandidate{Queue: q, Family: "cust"})
	}
	cfgs = append(cfgs, drover.QueueConfig{Name: "cust-own"}, drover.FamilyConfig{Name: "other", Prefix: "cust-o"}.QueueFor("cust-other"))
	cands = append(cands, RetireCandidate{Queue: "cust-own", Family: "cust"}, RetireCandidate{Queue: "cust-other", Family: "cust"},
		RetireCandidate{Queue: "cust-never", Family: "cust"})
	if _, err := s.Queues().CreateMany(ctx, cfgs); err != nil {
		t.Fatal(err)
	}
	buckets := map[string]bool{}
	for _, c := range cands[:1000] {
		buckets[registryBucket(c.Queue)] = true
	}
	multis.Store(0)
	var asked []RetireCandidate
	done, err := s.Queues().RetireMany(ctx, cands, func(_ context.Context, passed []RetireCandidate) ([]bool, error) {
		asked = passed
		ok := make([]bool, len(passed))
		for i := range ok {
			ok[i] = true
		}
		return ok, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1000 {
		t.Fatalf("empty: want the 1,000 queues of the family asked, have %d", len(asked))
	}
	for i, d := range done {
		if want := i < 1000; d != want {
			t.Fatalf("RetireMany of %s: want %v, have %v", cands[i].Queue, want, d)
		}
	}
	// Round one finds the buckets' notices missing (none was ever moved:
	// registrations do not) and creates them; round two writes. At the
	// 512 KB bound 1,000 small deletes take one multi a round.
	if m := multis.Load(); m > 4 {
		t.Fatalf("1,000 queues in %d buckets: want at most 4 multis, have %d", len(buckets), m)
	}
	names, err := s.Queues().Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 {
		t.Fatalf("after the retire: want cust-own and cust-other left, have %d queues", len(names))
	}
	reg := <-s.Queues().WatchRegistry(ctx)
	if reg.Len() != 2 || !reg.Has("cust-own") || !reg.Has("cust-other") {
		t.Fatalf("registry buckets after the retire: want cust-own and cust-other, have %d queues", reg.Len())
	}

	// Once the notices exist, a batch is one multi.
	var again []drover.QueueConfig
	cands = cands[:0]
	for i := range 1000 {
		q := fmt.Sprintf("cust-%04d", i)
		again = append(again, f.QueueFor(q))
		cands = append(cands, RetireCandidate{Queue: q, Family: "cust"})
	}
	if _, err := s.Queues().CreateMany(ctx, again); err != nil {
		t.Fatal(err)
	}
	multis.Store(0)
	done, err = s.Queues().RetireMany(ctx, cands, func(_ context.Context, passed []RetireCandidate) ([]bool, error) {
		return make([]bool, len(passed)), nil // none empty: nothing to write
	})
	if err != nil || multis.Load() != 0 {
		t.Fatalf("nothing empty: want no multi, have %d (%v)", multis.Load(), err)
	}
	done, err = s.Queues().RetireMany(ctx, cands, func(_ context.Context, passed []RetireCandidate) ([]bool, error) {
		ok := make([]bool, len(passed))
		for i := range ok {
			ok[i] = true
		}
		return ok, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range done {
		if !d {
			t.Fatalf("second retire of %s: want done, have kept", cands[i].Queue)
		}
	}
	if m := multis.Load(); m != 1 {
		t.Fatalf("1,000 queues, notices in place: want 1 multi, have %d", m)
	}
}

// A queue an operator reconfigures, or deletes, between RetireMany's read
// and its multi (while empty runs, as the registrar's Redis scripts do) is
// kept, or left deleted, and reported false; its bucket's other queues,
// and the other buckets packed with it, are retired all the same.
func TestRetireManyKeepsAQueueChangedMeanwhile(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s := connect(t, server.Addrs, root)
	operator := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	f := drover.FamilyConfig{Name: "cust", Prefix: "cust-"}
	names := append(oneBucketQueues(6), "cust-a", "cust-b", "cust-c")
	var cfgs []drover.QueueConfig
	var cands []RetireCandidate
	for _, q := range names {
		cfgs = append(cfgs, f.QueueFor(q))
		cands = append(cands, RetireCandidate{Queue: q, Family: "cust"})
	}
	if _, err := s.Queues().CreateMany(ctx, cfgs); err != nil {
		t.Fatal(err)
	}
	changed, deleted := names[1], names[4] // in one bucket with others
	done, err := s.Queues().RetireMany(ctx, cands, func(ctx context.Context, passed []RetireCandidate) ([]bool, error) {
		up := f.QueueFor(changed)
		up.Concurrency = 7
		if _, err := operator.Queues().Update(ctx, up, -1); err != nil {
			return nil, err
		}
		if err := operator.Queues().Delete(ctx, deleted); err != nil {
			return nil, err
		}
		ok := make([]bool, len(passed))
		for i := range ok {
			ok[i] = true
		}
		return ok, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range names {
		if want := q != changed && q != deleted; done[i] != want {
			t.Errorf("RetireMany of %s: want %v, have %v", q, want, done[i])
		}
	}
	e, err := s.Queues().Get(ctx, changed)
	if err != nil || e.Config.Concurrency != 7 {
		t.Fatalf("%s, reconfigured meanwhile: want it kept with concurrency 7, have %+v, %v", changed, e.Config, err)
	}
	for _, q := range names {
		if q == changed {
			continue
		}
		if _, err := s.Queues().Get(ctx, q); !errors.Is(err, drover.ErrQueueNotFound) {
			t.Errorf("%s: want it gone, have %v", q, err)
		}
	}
	reg := <-s.Queues().WatchRegistry(ctx)
	if reg.Len() != 1 || !reg.Has(changed) {
		t.Fatalf("registry buckets: want %s alone, have %d queues", changed, reg.Len())
	}
}

// The family registrar registers new queues while its retire sweep
// retires idle ones, both through the leader's session and into most of
// the same buckets. Their packed multis must not fail each other's
// version checks: in a churning fleet every packed retire round did, and
// the whole sweep step then went queue by queue (a step of 2,000 took
// minutes). The session's writers take turns, so a retire with
// registrations running beside it reads each config once (for its
// checks) and settles none on its own.
func TestRetireManyBesideCreateManyOfTheSameSessionPacks(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s, cc := connectCounting(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	f := drover.FamilyConfig{Name: "cust", Prefix: "cust-"}
	const n = 2000
	var cfgs []drover.QueueConfig
	var cands []RetireCandidate
	for i := range n {
		q := fmt.Sprintf("cust-%05d", i)
		cfgs = append(cfgs, f.QueueFor(q))
		cands = append(cands, RetireCandidate{Queue: q, Family: "cust"})
	}
	if _, err := s.Queues().CreateMany(ctx, cfgs); err != nil {
		t.Fatal(err)
	}
	// Registrations beside the retire, each touching hundreds of buckets.
	stop := make(chan struct{})
	registering := make(chan error, 1)
	go func() {
		for round := 0; ; round++ {
			select {
			case <-stop:
				registering <- nil
				return
			default:
			}
			var fresh []drover.QueueConfig
			for i := range 500 {
				fresh = append(fresh, f.QueueFor(fmt.Sprintf("cust-new-%03d-%03d", round, i)))
			}
			if _, err := s.Queues().CreateMany(ctx, fresh); err != nil {
				registering <- err
				return
			}
		}
	}()
	before := cc.counts().configReads
	var settled []bool
	done, err := s.Queues().RetireMany(ctx, cands, func(_ context.Context, passed []RetireCandidate) ([]bool, error) {
		settled = make([]bool, len(passed))
		for i := range settled {
			settled[i] = true
		}
		return settled, nil
	})
	reads := cc.counts().configReads - before
	close(stop)
	if err := <-registering; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range done {
		if !d {
			t.Fatalf("%s: want retired, have kept", cands[i].Queue)
		}
	}
	// One read per candidate (RetireMany's checks); a queue settled on its
	// own reads its config again.
	if reads != n {
		t.Fatalf("retire of %d queues beside registrations: want %d config reads (none settled alone), have %d", n, n, reads)
	}
}
