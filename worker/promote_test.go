package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// promoteLog is a memLog whose PromoteMany records each round trip's size;
// while held, a round trip waits in PromoteMany until released.
type promoteLog struct {
	*memLog
	readGate

	mu     sync.Mutex
	rounds []int // requests per PromoteMany call
}

func (l *promoteLog) PromoteMany(ctx context.Context, reqs []drover.PromoteRequest) []drover.PromoteResult {
	l.mu.Lock()
	l.rounds = append(l.rounds, len(reqs))
	h := l.gate()
	l.mu.Unlock()
	if h != nil {
		<-h
	}
	return l.memLog.PromoteMany(ctx, reqs)
}

// sent returns the round trips so far and the requests they carried.
func (l *promoteLog) sent() (rounds, reqs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.rounds {
		reqs += n
	}
	return len(l.rounds), reqs
}

func pendingPromotions(p *promoter) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending)
}

// Queues whose delayed messages come due together promote in shared round
// trips: one in flight, the others' promotions together in the next. Each
// loop sent its own (a round trip and a connection of the Redis client's
// pool each): a member with thousands of running queues queued hundreds
// of promotions for the pool, its health ping behind them, and gave its
// queues up (docs/decisions.md, "Issue 43: promotions in shared round
// trips").
func TestPromotionsOfManyQueuesShareRoundTrips(t *testing.T) {
	mem := newMemLog()
	log := &promoteLog{memLog: mem}
	ex := &scriptedExecutor{}
	clock := testkit.NewClock(t0)
	w := newTestWorker(t, mem, ex, atDefaults(clock, log))
	const n = 5
	claims := make([]*memClaim, n)
	for i := range n {
		claims[i] = &memClaim{}
		if err := w.Start(queueConfig(fmt.Sprintf("q%d", i), nil), claims[i]); err != nil {
			t.Fatal(err)
		}
	}
	allParked(t, w)
	allChecked(t, w)
	due := t0.Add(10 * time.Second)
	for i := range n {
		q := fmt.Sprintf("q%d", i)
		mem.addDelayed(q, msg("later-"+q), due)
		w.WakeAt(q, due) // the enqueue's wake-up names the due time
	}
	allParked(t, w)
	if r, _ := log.sent(); r != 0 {
		t.Fatalf("before the due time: want no promotion, have %d round trips", r)
	}

	release := log.holdReads() // holds promotions: the gate is the log's
	defer release()
	clock.Advance(10 * time.Second)
	waitFor(t, "every queue's promotion sent or waiting for the next round trip", func() bool {
		_, sent := log.sent()
		return sent+pendingPromotions(w.promotes) == n && sent > 0
	})
	release()
	waitFor(t, "every delayed message to run", func() bool { return len(ex.runList()) == n })
	rounds, reqs := log.sent()
	if reqs != n || rounds > 2 {
		t.Fatalf("%d queues' promotions: want them in at most 2 round trips (one in flight, the rest together), have %d round trips carrying %d", n, rounds, reqs)
	}
}
