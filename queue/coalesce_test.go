package queue

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// Concurrent submissions are flushed together, each gets its own result, and
// no batch exceeds the maximum.
func TestCoalescerGivesEachRequestItsResult(t *testing.T) {
	var mu sync.Mutex
	var batches []int
	c := coalescer{max: 8, flush: func(_ context.Context, batch []*enqueueRequest) {
		mu.Lock()
		batches = append(batches, len(batch))
		mu.Unlock()
		for _, r := range batch {
			r.res.ID = "done-" + r.id
		}
	}}
	var wg sync.WaitGroup
	const n = 400
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &enqueueRequest{id: string(rune('a'+i%26)) + string(rune('0'+i%10))}
			c.submit(context.Background(), r)
			if r.err != nil || r.res.ID != "done-"+r.id {
				t.Errorf("request %s: want result done-%s, have %+v, %v", r.id, r.id, r.res, r.err)
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, b := range batches {
		if b < 1 || b > 8 {
			t.Fatalf("batch of %d: want 1..8", b)
		}
		total += b
	}
	if total != n {
		t.Fatalf("flushed %d requests, want %d", total, n)
	}
	if c.busy || len(c.pending) != 0 {
		t.Fatalf("after all submissions: want an idle coalescer, have busy=%v pending=%d", c.busy, len(c.pending))
	}
}

// A request whose context ends while it waits is withdrawn and never sent;
// the others still are.
func TestCoalescerWithdrawsCancelledWaiters(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var mu sync.Mutex
	sent := map[string]bool{}
	c := coalescer{max: 8, flush: func(_ context.Context, batch []*enqueueRequest) {
		mu.Lock()
		for _, r := range batch {
			sent[r.id] = true
		}
		mu.Unlock()
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}}
	leaderDone := make(chan struct{})
	go func() {
		defer close(leaderDone)
		c.submit(context.Background(), &enqueueRequest{id: "leader"})
	}()
	<-entered // the leader's flush is in flight

	ctx, cancel := context.WithCancel(context.Background())
	waiter := &enqueueRequest{id: "cancelled"}
	waiterDone := make(chan struct{})
	go func() {
		defer close(waiterDone)
		c.submit(ctx, waiter)
	}()
	for {
		c.mu.Lock()
		queued := len(c.pending) == 1
		c.mu.Unlock()
		if queued {
			break
		}
	}
	cancel()
	<-waiterDone
	if !errors.Is(waiter.err, context.Canceled) {
		t.Fatalf("cancelled waiter: want context.Canceled, have %v", waiter.err)
	}
	close(release)
	<-leaderDone
	if sent["cancelled"] || !sent["leader"] {
		t.Fatalf("want only the leader sent, have %v", sent)
	}
	// A context that is already done sends nothing.
	r := &enqueueRequest{id: "late"}
	c.submit(ctx, r)
	if !errors.Is(r.err, context.Canceled) || sent["late"] {
		t.Fatalf("submit with a done context: want context.Canceled and nothing sent, have %v", r.err)
	}
}

// A lone caller's flush carries its request without allocating a batch,
// and with a context that can never end (Background), nothing at all; a
// context that can end is detached for the flush (its one allocation), so
// that cancelling it cannot cut the reply's read short.
func TestCoalescerLoneCallerAllocatesNoBatch(t *testing.T) {
	var sizes []int
	var flushCtx context.Context
	c := coalescer{max: 8, flush: func(ctx context.Context, batch []*enqueueRequest) {
		sizes = append(sizes[:0], len(batch))
		flushCtx = ctx
		batch[0].res.ID = "done"
	}}
	r := &enqueueRequest{id: "a"}
	allocs := testing.AllocsPerRun(100, func() {
		r.res = EnqueueResult{}
		c.submit(context.Background(), r)
	})
	if r.res.ID != "done" || len(sizes) != 1 || sizes[0] != 1 {
		t.Fatalf("want the request flushed alone with its result, have batch sizes %v, result %+v", sizes, r.res)
	}
	if allocs != 0 {
		t.Fatalf("want no allocation per lone submit with a context that never ends, have %.1f", allocs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	allocs = testing.AllocsPerRun(100, func() {
		r.res = EnqueueResult{}
		c.submit(ctx, r)
	})
	cancel()
	if r.res.ID != "done" || flushCtx.Done() != nil || flushCtx.Err() != nil {
		t.Fatalf("a cancellable caller: want its flush detached (no Done, no error after cancel), have result %+v, Done %v, Err %v", r.res, flushCtx.Done(), flushCtx.Err())
	}
	if allocs > 1 {
		t.Fatalf("want at most 1 allocation per lone submit with a cancellable context, have %.1f", allocs)
	}
}
