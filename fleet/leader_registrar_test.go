package fleet

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// fakeRegistrar is a FamilyRegistrar that records what the leader hands
// it and creates queues when the test says so.
type fakeRegistrar struct {
	created chan struct{}

	mu       sync.Mutex
	runs     int
	observed []int // each snapshot's length
	pending  []drover.QueueConfig
}

func (r *fakeRegistrar) Run(ctx context.Context) error {
	r.mu.Lock()
	r.runs++
	r.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (r *fakeRegistrar) Observe(reg coordinator.Registry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observed = append(r.observed, reg.Len())
}

func (r *fakeRegistrar) Created() <-chan struct{} { return r.created }

func (r *fakeRegistrar) TakeCreated() []drover.QueueConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.pending
	r.pending = nil
	return out
}

// create registers names, as the registrar does at a family key's first
// enqueue, and tells the leader.
func (r *fakeRegistrar) create(names ...string) {
	r.mu.Lock()
	for _, n := range names {
		r.pending = append(r.pending, drover.QueueConfig{Name: n})
	}
	r.mu.Unlock()
	r.created <- struct{}{}
}

func (r *fakeRegistrar) seen() (runs int, observed []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs, append([]int(nil), r.observed...)
}

// The rebalance leader on fakes with a family registrar behind its port
// (the registrar is its own package: fleet sees only FamilyRegistrar): the
// registrar runs beside the term, is handed each registry snapshot the
// term reads, and the queues it created are placed at once, appended to
// the assignment before any registry snapshot lists them.
func TestTheLeaderRunsTheRegistrarAndPlacesWhatItCreated(t *testing.T) {
	s := newFakeLeaderSession()
	reg := &fakeRegistrar{created: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunRebalancer(ctx, RebalancerConfig{
			Session: s, Elector: &fakeElector{s: s.fakeSession}, Candidate: "me", Registrar: reg,
			Settle: time.Millisecond, CampaignRetry: time.Millisecond, RedisGrace: time.Millisecond,
			Logger: testkit.Logger(t, hclog.Warn),
		})
	}()
	t.Cleanup(func() { cancel(); <-done })

	s.members <- members("a", "b")
	s.queues <- queues("q1", "q2")
	testkit.Eventually(t, "the first assignment written", func() bool { return len(s.writes()) >= 1 })
	testkit.Eventually(t, "the snapshot handed to the registrar", func() bool {
		_, observed := reg.seen()
		return len(observed) == 1 && observed[0] == 2
	})

	reg.create("f-1", "f-2")
	testkit.Eventually(t, "the created queues placed", func() bool {
		w := s.writes()
		last := w[len(w)-1]
		return last.Queues["f-1"] != "" && last.Queues["f-2"] != ""
	})
	s.mu.Lock()
	appends := s.appends
	s.mu.Unlock()
	last := s.writes()[len(s.writes())-1]
	if appends != 1 || len(last.Queues) != 4 || last.Queues["q1"] == "" || last.Queues["q2"] == "" {
		t.Fatalf("want f-1 and f-2 appended to q1 and q2 in one Update, have %d appends, %v", appends, last.Queues)
	}
	if runs, _ := reg.seen(); runs != 1 {
		t.Fatalf("want the registrar run once for the one term, have %d runs", runs)
	}
}
