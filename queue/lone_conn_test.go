package queue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// poolGets is how many connections rdb's pool has handed out.
func poolGets(rdb redis.UniversalClient) uint32 {
	st := rdb.PoolStats()
	return st.Hits + st.Misses
}

// Lone enqueues one after another take no connection from the pool: the
// lone call keeps its own (loneConn). Before, each took one, and the pool
// checked it with a syscall on the round trip's path. A kept connection
// that rests past loneIdle goes back, and the next call takes a checked
// one.
func TestALoneEnqueueKeepsItsConnection(t *testing.T) {
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	clk := &setClock{now: time.Now()}
	s := newTestStore(t, rdb, func(cfg *Config) { cfg.Clock = clk })
	mustEnqueue(t, s, msg("lone", "")) // registers the queue (enqueue-spread beside the SADD), reads TIME
	mustEnqueue(t, s, msg("lone", "")) // loads enqueue-one
	before := poolGets(rdb)
	const n = 50
	for range n {
		if r := mustEnqueue(t, s, msg("lone", "")); r.Duplicate || r.Position == 0 {
			t.Fatalf("a lone enqueue answered %+v", r)
		}
	}
	if have := poolGets(rdb) - before; have > 0 {
		t.Fatalf("%d lone enqueues one after another took %d connections from the pool, want none", n, have)
	}

	clk.set(clk.Now().Add(loneIdle + time.Millisecond)) // still within the clock estimate's life
	before = poolGets(rdb)
	mustEnqueue(t, s, msg("lone", ""))
	if have := poolGets(rdb) - before; have != 1 {
		t.Fatalf("a lone enqueue after the kept connection rested %s took %d connections from the pool, want 1 (checked by the pool)", loneIdle, have)
	}
}

// The server closes the kept connection (here CLIENT KILL; a restart or
// its idle timeout alike) while the producer is not quiet long enough for
// the pool's check: the next lone enqueue still lands, once, through the
// pool, and the one after keeps a connection again.
func TestALoneEnqueueOnAConnectionTheServerClosedGoesThroughThePool(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}, ClientName: "lone-producer"})
	admin := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	clk := &setClock{now: time.Now()}
	s := newTestStore(t, rdb, func(cfg *Config) { cfg.Clock = clk })
	mustEnqueue(t, s, msg("lone", ""))
	mustEnqueue(t, s, msg("lone", "")) // now on the kept connection
	killed, err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Int()
	if err != nil || killed == 0 {
		t.Fatalf("CLIENT KILL: %d killed, %v", killed, err)
	}
	r, err := s.Producer().Enqueue(ctx, msg("lone", ""))
	if err != nil {
		t.Fatalf("a lone enqueue after the server closed the kept connection: %v", err)
	}
	if r.Duplicate || r.Position == 0 {
		t.Fatalf("a lone enqueue sent again through the pool answered %+v, want a new position", r)
	}
	if n, err := rdb.ZCard(ctx, s.keys.queue("lone").log).Result(); err != nil || n != 3 {
		t.Fatalf("the log holds %d messages (%v), want 3: each enqueue once", n, err)
	}
	before := poolGets(rdb)
	mustEnqueue(t, s, msg("lone", "")) // takes a connection to keep
	mustEnqueue(t, s, msg("lone", ""))
	if have := poolGets(rdb) - before; have != 1 {
		t.Fatalf("two lone enqueues after the failure took %d connections from the pool, want 1 (the one kept)", have)
	}
}

// Lone calls from many goroutines at once, through Enqueue (the coalescer
// sends one flush at a time) and through EnqueueBatch of one message (sent
// by its caller, beside the coalescer's): one of them holds the kept
// connection, the others go through the pool, and every message gets its
// own position.
func TestConcurrentLoneEnqueuesShareTheKeptConnection(t *testing.T) {
	ctx := context.Background()
	rdb := testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	s := newTestStore(t, rdb, nil)
	const goroutines, each = 8, 50
	for g := range goroutines {
		mustEnqueue(t, s, msg(fmt.Sprintf("q%d", g), "")) // registers the queue: the next calls go alone
	}
	var (
		mu   sync.Mutex
		seen = map[string]drover.Position{}
		wg   sync.WaitGroup
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := fmt.Sprintf("q%d", g)
			for i := range each {
				var r EnqueueResult
				var err error
				if i%2 == 0 {
					r, err = s.Producer().Enqueue(ctx, msg(q, ""))
				} else {
					var rs []EnqueueResult
					if rs, err = s.Producer().EnqueueBatch(ctx, []*drover.Message{msg(q, "")}); err == nil {
						r = rs[0]
					}
				}
				if err != nil || r.Duplicate || r.Position == 0 {
					t.Errorf("%s: %+v, %v", q, r, err)
					return
				}
				mu.Lock()
				seen[q+"/"+r.ID] = r.Position
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != goroutines*each {
		t.Fatalf("%d distinct messages, want %d", len(seen), goroutines*each)
	}
	for g := range goroutines {
		q := fmt.Sprintf("q%d", g)
		if n, err := rdb.ZCard(ctx, s.keys.queue(q).log).Result(); err != nil || n != each+1 {
			t.Fatalf("%s's log holds %d messages (%v), want %d", q, n, err, each+1)
		}
	}
}

// A Sentinel failover moves the master while a producer keeps a
// connection to the old one (a graceful SENTINEL FAILOVER: the old master
// lives on as a replica, so its connections stay open): the lone enqueues
// after it land on the new master, and the kept connection does not stay
// on the old one.
func TestLoneEnqueuesFollowASentinelFailover(t *testing.T) {
	ctx := context.Background()
	sr := newSentinelled(t, "drover-lone")
	r := sr.replicated
	s := newTestStore(t, sr.rdb, nil)
	const q = "lone-failover"
	mustEnqueue(t, s, msg(q, ""))
	mustEnqueue(t, s, msg(q, "")) // on the kept connection
	sr.failover(t)
	sr.waitPromoted(t)
	var last EnqueueResult
	waitFor(t, "a lone enqueue lands on the new master", func() bool {
		var err error
		last, err = s.Producer().Enqueue(ctx, msg(q, ""))
		if err != nil {
			return false // the client finding the new master; the old one answers READONLY
		}
		_, err = r.replicaRDB.ZScore(ctx, s.keys.queue(q).log, last.ID).Result()
		return err == nil
	})
	newMaster := r.replicaRDB
	for i := range 10 {
		r, err := s.Producer().Enqueue(ctx, msg(q, ""))
		if err != nil || r.Position <= last.Position {
			t.Fatalf("lone enqueue %d after the failover: %+v, %v (the last position %d)", i, r, err, last.Position)
		}
		last = r
		if _, err := newMaster.ZScore(ctx, s.keys.queue(q).log, r.ID).Result(); err != nil {
			t.Fatalf("lone enqueue %d after the failover is not on the new master: %v", i, err)
		}
	}
}
