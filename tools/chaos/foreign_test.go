package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// The Node and Python producers enqueue what the harness gives them and
// answer in order; a batch sent again after its outcome was unknown (Redis
// frozen under it, the child killed on the timeout and started again) is
// confirmed without a second copy of any message that carries an id.
func TestForeignProducersEnqueueAndComeBackAfterAFrozenRedis(t *testing.T) {
	ctx := context.Background()
	root, err := moduleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv := testenv.NewRedis(t, testenv.RedisOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	ps, err := newForeignProducers(ctx, []string{producerNode, producerPython}, root, t.TempDir(), redisTarget{addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
		defer p.stop()
	}
	args := json.RawMessage(`{"sleep_ms":1}`)
	named := func(p *foreignProducer, ids ...string) []*drover.Message {
		var ms []*drover.Message
		for _, id := range ids {
			ms = append(ms, &drover.Message{ID: id, Queue: "f-" + p.name + "-named", Task: "work", Args: args})
		}
		return ms
	}
	logLen := func(q string) int64 {
		t.Helper()
		n, err := rdb.ZCard(ctx, redisPrefix+":{"+q+"}:log").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	for _, p := range ps {
		res, err := p.enqueue(named(p, "a1", "a2", "a3"))
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		for i, r := range res {
			if want := fmt.Sprintf("a%d", i+1); r.ID != want || r.Position <= 0 || r.Duplicate || (i > 0 && r.Position <= res[i-1].Position) {
				t.Fatalf("%s: result %d: want %s at a position after the one before, have %+v", p.name, i, want, res)
			}
		}
		again, err := p.enqueue(named(p, "a1", "a2", "a3"))
		if err != nil || slices.ContainsFunc(again, func(r queue.EnqueueResult) bool { return !r.Duplicate }) {
			t.Fatalf("%s: the same ids again: want three duplicates, have %+v (%v)", p.name, again, err)
		}
		// Generated ids, one message on each of two queues: the lone
		// scripts' path (enqueue-spread).
		gen := []*drover.Message{{Queue: "f-" + p.name + "-gen1", Task: "work", Args: args}, {Queue: "f-" + p.name + "-gen2", Task: "work", Args: args}}
		res, err = p.enqueue(gen)
		if err != nil || len(res) != 2 || res[0].ID == "" || res[0].ID == res[1].ID || res[0].Position <= 0 || res[1].Position <= 0 {
			t.Fatalf("%s: generated ids: want two ids of their own at positions, have %+v (%v)", p.name, res, err)
		}
		if n := logLen("f-" + p.name + "-named"); n != 3 {
			t.Fatalf("%s: want 3 messages in the named queue's log, have %d", p.name, n)
		}
	}

	// Redis frozen: each batch fails (an error answer, or no answer within
	// foreignTimeout and the child is started again), never hangs.
	srv.Pause(t)
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() {
			if res, err := p.enqueue(named(p, "b1", "b2")); err == nil {
				t.Errorf("%s: Redis frozen: want an error, have %+v", p.name, res)
			}
		})
	}
	wg.Wait()
	srv.Resume(t)
	for _, p := range ps {
		res, err := p.enqueue(named(p, "b1", "b2"))
		if err != nil || len(res) != 2 || res[0].ID != "b1" || res[1].ID != "b2" {
			t.Fatalf("%s: after the freeze: want b1 and b2 confirmed, have %+v (%v)", p.name, res, err)
		}
		if n := logLen("f-" + p.name + "-named"); n != 5 {
			t.Errorf("%s: want 5 messages in the named queue's log (b1 and b2 once, whatever the frozen batch did), have %d", p.name, n)
		}
		if _, failures := p.counts(); failures != 1 {
			t.Errorf("%s: want the frozen batch counted as the one failure, have %d", p.name, failures)
		}
	}
}

func TestForeignAnswersAreReadStrictly(t *testing.T) {
	res, err := parseForeignAnswer("node", `{"results":[{"id":"a","result":17},{"id":"b","result":-1}]}`, 2)
	if err != nil || res[0].ID != "a" || res[0].Position != 17 || res[0].Duplicate || res[1].ID != "b" || !res[1].Duplicate || res[1].Position != 0 {
		t.Fatalf("want a at 17 and b a duplicate, have %+v (%v)", res, err)
	}
	for _, bad := range []struct{ line, why string }{
		{`{"error":"ReplyError: LOADING"}`, "an error answer"},
		{`{"results":[{"id":"a","result":17}]}`, "one result for two messages"},
		{`{"results":[{"id":"a","result":17},{"id":"","result":18}]}`, "a result without an id"},
		{`{"results":[{"id":"a","result":17},{"id":"b","result":0}]}`, "a delayed result for a message due now"},
		{`not json`, "not JSON"},
	} {
		if _, err := parseForeignAnswer("node", bad.line, 2); err == nil {
			t.Errorf("%s: want an error", bad.why)
		}
	}
}

func TestForeignProducersTakeEveryThirdQueueEach(t *testing.T) {
	node, py := &foreignProducer{name: producerNode}, &foreignProducer{name: producerPython}
	qs := queueNames(7)
	routes := foreignRoutes(qs, []*foreignProducer{node, py})
	for i, q := range qs {
		want := map[int]*foreignProducer{0: nil, 1: node, 2: py}[i%3]
		if routes[q] != want {
			t.Errorf("%s: want %v, have %v", q, want, routes[q])
		}
	}
	if foreignRoutes(qs, nil) != nil {
		t.Errorf("no foreign producer: want no routes")
	}
	// One producer: a third of the queues; the rest stay the Go producer's.
	if routes := foreignRoutes(qs, []*foreignProducer{py}); len(routes) != 2 || routes["q01"] != py || routes["q04"] != py {
		t.Errorf("python alone: want q01 and q04 (a third of the queues), have %v", routes)
	}
}
