package queue

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/internal/testing/testkit"
)

// routeRig is a producer's Store on a private server, on a clock the test
// moves, and the members' subscriptions.
type routeRig struct {
	t     *testing.T
	ctx   context.Context
	rdb   redis.UniversalClient
	s     *Store
	clock *tickClock
}

func newRouteRig(t *testing.T) *routeRig {
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	// A clock that moves 1 ms a reading: the producer's estimate of
	// Redis's clock moves on with it, so that each position is the
	// estimate (one SET a message: TestLoneEnqueueCommands).
	clock := &tickClock{now: time.Now()}
	r := &routeRig{t: t, ctx: context.Background(), rdb: rdb, clock: clock}
	r.s = newTestStore(t, rdb, func(cfg *Config) { cfg.Clock = clock })
	return r
}

// member subscribes a member to its wake-ups until the returned cancel.
func (r *routeRig) member(name string) (<-chan Wakeup, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.ctx)
	r.t.Cleanup(cancel)
	ch, err := r.s.Listener().Wakeups(ctx, name)
	if err != nil {
		r.t.Fatal(err)
	}
	return ch, cancel
}

func (r *routeRig) route(member, queue string) {
	if err := r.s.Log().RouteWakeups(r.ctx, member, queue); err != nil {
		r.t.Fatal(err)
	}
}

// wakeup waits for one wake-up of queue on ch.
func (r *routeRig) wakeup(ch <-chan Wakeup, queue, who string) Wakeup {
	r.t.Helper()
	select {
	case wk := <-ch:
		if wk.Queue != queue {
			r.t.Fatalf("%s: want a wake-up of %s, have %+v", who, queue, wk)
		}
		return wk
	case <-time.After(testkit.Bound):
		r.t.Fatalf("%s: no wake-up of %s", who, queue)
	}
	return Wakeup{}
}

// gets counts the :owner reads since the last call.
func (r *routeRig) gets() int {
	r.t.Helper()
	n := commandCalls(r.t, r.rdb)["get"]
	if err := r.rdb.ConfigResetStat(r.ctx).Err(); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// A producer keeps the owner's route a lone enqueue read and publishes its
// next wake-ups there: a lone enqueue to an owned queue costs five commands,
// no :owner GET, until routeTTL passes.
func TestALoneEnqueueKeepsTheOwnersRoute(t *testing.T) {
	r := newRouteRig(t)
	m1, _ := r.member("m1")
	r.route("m1", "q")
	mustEnqueue(t, r.s, msg("q", "")) // registers the queue (enqueue-spread beside the SADD)
	r.wakeup(m1, "q", "m1")
	r.clock.skip(pastFirstPosition)
	mustEnqueue(t, r.s, msg("q", "")) // loads enqueue-one, asks for the route
	r.wakeup(m1, "q", "m1")
	r.gets()
	const n = 20
	for range n {
		mustEnqueue(t, r.s, msg("q", ""))
		r.wakeup(m1, "q", "m1")
	}
	have := commandCalls(t, r.rdb)
	for name, want := range map[string]int{"evalsha": n, "hsetnx": n, "set": n, "zadd": n, "publish": n} {
		if have[name] != want {
			t.Errorf("%s: want %d for %d lone enqueues, have %v", name, want, n, have)
		}
		delete(have, name)
	}
	delete(have, "config|resetstat")
	if len(have) > 0 {
		t.Errorf("want no other command (no :owner GET), have %v", have)
	}
	r.gets()
	r.clock.mu.Lock()
	r.clock.now = r.clock.now.Add(routeTTL)
	r.clock.mu.Unlock()
	mustEnqueue(t, r.s, msg("q", ""))
	r.wakeup(m1, "q", "m1")
	if n := r.gets(); n != 1 {
		t.Fatalf("after routeTTL: want the route read again (1 GET), have %d", n)
	}
}

// A route whose member is gone (PUBLISH reached nobody) costs the call the
// :owner read it saved: the wake-up goes to the owner all the same, the
// position is the message's, and the producer reads the route again next.
func TestAWakeupNobodyHeardGoesToTheOwner(t *testing.T) {
	r := newRouteRig(t)
	m1, leave := r.member("m1")
	r.route("m1", "q")
	mustEnqueue(t, r.s, msg("q", ""))
	mustEnqueue(t, r.s, msg("q", "")) // the route m1 kept
	r.wakeup(m1, "q", "m1")
	r.wakeup(m1, "q", "m1")
	leave()
	for range m1 { // closed once unsubscribed
	}
	m2, _ := r.member("m2")
	r.route("m2", "q")
	res := mustEnqueue(t, r.s, msg("q", ""))
	wk := r.wakeup(m2, "q", "m2")
	if res.Duplicate || res.Position <= 0 || wk.Entry == nil || wk.Entry.Position != res.Position {
		t.Fatalf("want the message at its position, carried to m2, have %+v and %+v", res, wk)
	}
	r.gets()
	mustEnqueue(t, r.s, msg("q", "")) // asks again
	r.wakeup(m2, "q", "m2")
	mustEnqueue(t, r.s, msg("q", "")) // m2's route kept
	r.wakeup(m2, "q", "m2")
	if n := r.gets(); n != 1 {
		t.Fatalf("after a route that reached nobody: want the route read once again, have %d GETs", n)
	}
}

// A route that names a live member which no longer runs the queue wakes
// that member, which passes the wake-up on to the owner (the worker does,
// for queues it does not run: worker.FollowWakeups), or on the unowned
// channel for a queue with no owner (a family's key retired since the
// producer read its route: the rebalance leader registers it there); a
// member never passes on the wake-ups of queues routed to itself.
func TestAMovedQueuesWakeupIsPassedOn(t *testing.T) {
	r := newRouteRig(t)
	m1, _ := r.member("m1")
	m2, _ := r.member("m2")
	unowned, err := r.s.Families().UnownedWakeups(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.route("m1", "q")
	mustEnqueue(t, r.s, msg("q", ""))
	mustEnqueue(t, r.s, msg("q", ""))
	r.wakeup(m1, "q", "m1")
	r.wakeup(m1, "q", "m1")
	r.route("m2", "q") // the queue moves; the producer's route is m1's
	mustEnqueue(t, r.s, msg("q", ""))
	r.wakeup(m1, "q", "m1 (the previous owner)")
	// Anyone may publish on a member's channel: a name no queue can have is
	// left out, not the call.
	if n, err := r.s.Listener().ForwardWakeups(r.ctx, "m1", "q", "nobodys", "no{queue}"); err != nil || n != 2 {
		t.Fatalf("m1 passes q and nobodys on: want 2, have %d, %v", n, err)
	}
	r.wakeup(m2, "q", "m2 (the owner)")
	r.wakeup(unowned, "nobodys", "the unowned channel")
	if n, err := r.s.Listener().ForwardWakeups(r.ctx, "m2", "q"); err != nil || n != 0 {
		t.Fatalf("m2 is q's owner: want nothing passed on, have %d, %v", n, err)
	}
}

// On a Cluster, PUBLISH counts one node's receivers: producers keep no
// route and read :owner for every wake-up.
func TestAClusterProducerKeepsNoRoute(t *testing.T) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { cc.Close() })
	s, err := New(Config{Client: cc, Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if s.routes.arg(context.Background(), cc, "q") != nil {
		t.Fatal("a Cluster producer sends a route")
	}
}

// PUBLISH counts pattern subscribers too, and the autoscaler's pattern
// (Listener.AllWakeups) matches every member's channel, a gone member's
// included: while the server has one, a producer keeps no route and reads
// :owner for every wake-up; it asks again (PUBSUB NUMPAT) every routeTTL.
func TestAPatternSubscriberTurnsTheRoutesOff(t *testing.T) {
	r := newRouteRig(t)
	obsCtx, stopObserver := context.WithCancel(r.ctx)
	defer stopObserver()
	obs, err := r.s.Listener().AllWakeups(obsCtx)
	if err != nil {
		t.Fatal(err)
	}
	m1, _ := r.member("m1")
	r.route("m1", "q")
	mustEnqueue(t, r.s, msg("q", "")) // registers the queue
	r.wakeup(m1, "q", "m1")
	r.gets()
	for range 3 {
		mustEnqueue(t, r.s, msg("q", ""))
		r.wakeup(m1, "q", "m1")
	}
	if n := r.gets(); n != 3 {
		t.Fatalf("with a pattern subscriber: want :owner read at every enqueue (3 GETs), have %d", n)
	}
	stopObserver()
	for range obs { // closed once unsubscribed
	}
	testkit.Eventually(t, "the server dropped the pattern subscription", func() bool {
		n, err := r.rdb.PubSubNumPat(r.ctx).Result()
		return err == nil && n == 0
	})
	r.clock.mu.Lock()
	r.clock.now = r.clock.now.Add(routeTTL)
	r.clock.mu.Unlock()
	for range 3 {
		mustEnqueue(t, r.s, msg("q", ""))
		r.wakeup(m1, "q", "m1")
	}
	if n := r.gets(); n != 1 {
		t.Fatalf("no pattern subscriber after routeTTL: want the route read once (1 GET), have %d", n)
	}
}
