package queue

import (
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/testing/testkit"
)

// An entry stays while it is used once a period, and goes one to two
// periods after its last use; two periods without any call drop everything.
func TestRecentForgetsWhatWasNotUsedForAPeriodOrTwo(t *testing.T) {
	clock := testkit.NewClock(time.Unix(1_700_000_000, 0))
	r := newRecent[int](clock, time.Minute)
	r.Store("used", 1)
	r.Store("unused", 2)
	r.Store("gone", 3)
	r.Delete("gone")
	if _, ok := r.Load("gone"); ok {
		t.Fatal("a deleted entry is still there")
	}
	clock.Advance(time.Minute) // turn: both are now in the previous generation
	if v, ok := r.Load("used"); !ok || v != 1 {
		t.Fatalf("one period after its store: want used = 1, have %v, %v", v, ok)
	}
	clock.Advance(time.Minute) // turn: unused goes, used was copied forward
	if v, ok := r.Load("used"); !ok || v != 1 {
		t.Fatalf("used each period: want used = 1, have %v, %v", v, ok)
	}
	if _, ok := r.Load("unused"); ok {
		t.Fatal("two periods without a use: want unused forgotten")
	}
	if n := r.Len(); n != 2 { // used, in both generations
		t.Fatalf("want used held twice (both generations), have %d entries", n)
	}
	clock.Advance(2 * time.Minute) // nothing called for two periods
	if _, ok := r.Load("used"); ok {
		t.Fatal("two periods without any call: want everything forgotten")
	}
	if n := r.Len(); n != 0 {
		t.Fatalf("want no entry left, have %d", n)
	}
}

// A producer forgets a queue it stopped sending to: its memory holds the
// queues of the last knownFor or two, not every queue it ever sent to (a
// per-key fleet's keys come and go), and a queue it forgot is added to the
// registry again by its next message (here: after an operator removed it).
// Before recent, Store.known kept every queue for the life of the process
// and the SADD was never sent again.
func TestAProducerForgetsTheQueuesItStoppedSendingTo(t *testing.T) {
	r := newRouteRig(t)
	for _, q := range []string{"q", "k1", "k2", "k3"} {
		mustEnqueue(t, r.s, msg(q, ""))
		mustEnqueue(t, r.s, msg(q, "")) // the lone script: asks for the route
	}
	if n := r.s.known.Len(); n != 4 {
		t.Fatalf("want 4 queues known, have %d", n)
	}
	if n := r.s.routes.m.Len(); n != 4 {
		t.Fatalf("want 4 queues' routes kept, have %d", n)
	}
	registered := func() bool {
		t.Helper()
		ok, err := r.rdb.SIsMember(r.ctx, r.s.keys.queues(), "q").Result()
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if err := r.rdb.SRem(r.ctx, r.s.keys.queues(), "q").Err(); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, r.s, msg("q", ""))
	if registered() {
		t.Fatal("a queue the producer knows: want no SADD")
	}
	r.clock.mu.Lock()
	r.clock.now = r.clock.now.Add(2 * knownFor)
	r.clock.mu.Unlock()
	mustEnqueue(t, r.s, msg("q", ""))
	if !registered() {
		t.Fatal("2 × knownFor after its last message: want the queue added to the registry again")
	}
	if n := r.s.known.Len(); n != 1 {
		t.Fatalf("want only q known (the keys it stopped sending to forgotten), have %d", n)
	}
	mustEnqueue(t, r.s, msg("q", "")) // the lone script again: asks for q's route
	if n := r.s.routes.m.Len(); n != 1 {
		t.Fatalf("want only q's route kept, have %d", n)
	}
}
