package fleet

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testkit"
	"github.com/drover-dev/drover/rebalance"
)

// countingStrategy counts the targets computed.
type countingStrategy struct {
	rebalance.Strategy
	calls atomic.Int64
}

func (s *countingStrategy) Assign(in rebalance.Input) (rebalance.Result, error) {
	defer s.calls.Add(1)
	return s.Strategy.Assign(in)
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Defect (issue 14): the rebalance leader held the queue registry twice:
// the snapshot the registry watch delivers and a []rebalance.Queue built
// from it at every registry change (48 bytes a queue, 4.8 MB at 100,000
// queues, kept for as long as the registry did not change). The strategy
// now reads the snapshot in place: between rebalances, the leader holds
// nothing per queue beyond the snapshot the watch shares with it.
//
// The assignment in force is already the target, so the leader computes it
// and writes nothing: what the heap holds afterwards beyond the test's own
// snapshot and assignment is what the leader keeps.
func TestTheLeaderHoldsTheRegistryOnce(t *testing.T) {
	const n = 100_000
	qs := make([]coordinator.RegisteredQueue, n)
	for i := range qs {
		qs[i] = coordinator.RegisteredQueue{Name: fmt.Sprintf("queue-%06d", i)}
	}
	reg := coordinator.NewRegistry(qs...)
	qs = nil
	ms := members("a", "b", "c", "d")
	in := rebalance.Input{}
	for _, m := range ms {
		in.Members = append(in.Members, rebalance.FromMember(m.Member))
	}
	in.Source = registryQueues{reg}
	target, err := rebalance.Sticky{}.Assign(in)
	if err != nil {
		t.Fatal(err)
	}
	in = rebalance.Input{}

	s := newFakeLeaderSession()
	s.current = drover.Assignment{Generation: 1, Strategy: rebalance.StickyName, Leader: "me", Queues: target.Queues}
	strategy := &countingStrategy{Strategy: rebalance.Sticky{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	before := liveHeap()
	go func() {
		done <- RunRebalancer(ctx, RebalancerConfig{Session: s, Elector: &fakeElector{s: s.fakeSession}, Candidate: "me",
			Strategy: strategy, Settle: time.Millisecond, Logger: testkit.Logger(t, hclog.Warn)})
	}()
	defer func() { cancel(); <-done }()
	s.members <- ms
	s.queues <- reg
	testkit.Eventually(t, "the target computed", func() bool { return strategy.calls.Load() >= 1 })

	// The computation's garbage is collectable once writeTarget returns;
	// poll until the leader is back waiting for a change.
	const bound = 4 // bytes a queue: the old copy took 48
	var perQueue float64
	deadline := time.Now().Add(testkit.Bound)
	for {
		perQueue = (float64(liveHeap()) - float64(before)) / n
		if perQueue <= bound || time.Now().After(deadline) {
			break
		}
		runtime.Gosched()
	}
	runtime.KeepAlive(reg)
	if perQueue > bound {
		t.Fatalf("the leader idle between rebalances at %d queues: want at most %d bytes a queue beyond the registry snapshot, have %.1f", n, bound, perQueue)
	}
	if w := s.writes(); len(w) != 0 {
		t.Fatalf("the assignment in force was the target: want no write, have %d", len(w))
	}
	t.Logf("the leader holds %.2f bytes a queue beyond the registry snapshot", perQueue)
}
