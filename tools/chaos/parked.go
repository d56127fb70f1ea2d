package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/tools/chaos/check"
)

// Parking under chaos (issue 31): one more ordered queue, parkQueue, with
// on_failure park and two attempts, fed a few messages at a time of which
// some fail every attempt (args "fail": the task exits 1 without logging,
// so that only the successful run is an execution). Its owner parks it at
// each failing head; the parker sees the park (the pause flag), records it
// and resolves it with a retry whose edited args no longer fail. The
// checker counts the parks and reports any later message that started
// while its head was parked (check.ParkedAhead).

// parkQueue is the parking queue's name.
const parkQueue = "park00"

// parker feeds and resolves parkQueue.
type parker struct {
	gen  *loadGen
	zk   *zkClient
	seq  int
	mu   sync.Mutex
	open map[string]*check.Park // head id → its park, until resolved
	done []check.Park
	errs int // failed look-ups or resolutions (retried)
}

// setupParking creates parkQueue; run wires h.parker.
func (h *harness) setupParking(ctx context.Context, create func(context.Context, drover.QueueConfig) error, taskArgv []string) error {
	qc := queueConfig(parkQueue, true, taskArgv)
	qc.MaxAttempts, qc.OnFailure = 2, drover.OnFailurePark
	if err := create(ctx, qc); err != nil {
		return fmt.Errorf("create queue %s: %w", parkQueue, err)
	}
	h.ordered[parkQueue] = true
	return nil
}

// run feeds parkQueue while feed is live (a batch of 3, one failing, when
// the last batch has run) and resolves its parks until ctx ends.
func (p *parker) run(feed, ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if feed.Err() == nil && p.gen.ran != nil {
			p.gen.mu.Lock()
			n := p.gen.perQueue[parkQueue]
			p.gen.mu.Unlock()
			if n-p.gen.ran(parkQueue) <= 0 {
				p.gen.send(ctx, p.batch())
			}
		}
		p.resolve(ctx)
	}
}

func (p *parker) batch() []*drover.Message {
	msgs := make([]*drover.Message, 3)
	for i := range msgs {
		p.seq++
		args := `{"sleep_ms":5}`
		if i == 1 {
			args = `{"sleep_ms":5,"fail":true}`
		}
		msgs[i] = &drover.Message{ID: fmt.Sprintf("p-%07d", p.seq), Queue: parkQueue, Task: "work", Args: json.RawMessage(args)}
	}
	return msgs
}

// resolve records the queue's park, if any, and retries its head with args
// that do not fail.
func (p *parker) resolve(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := p.zk.session(cctx)
	if err != nil {
		p.fail()
		return
	}
	o, err := ops.New(ops.Config{ZK: s, Store: p.gen.store})
	if err != nil {
		p.fail()
		return
	}
	pq, err := o.Jobs().ParkedHead(cctx, parkQueue)
	if err != nil {
		return // not parked (ErrRefused), or a fault: look again next tick
	}
	h := pq.Pause.Head
	p.mu.Lock()
	if p.open == nil {
		p.open = map[string]*check.Park{}
	}
	if p.open[h.ID] == nil {
		p.open[h.ID] = &check.Park{Queue: parkQueue, HeadID: h.ID, HeadPosition: int64(h.Position), ParkedAt: pq.Pause.At}
	}
	p.mu.Unlock()
	if err := o.Jobs().RetryParked(cctx, parkQueue, h.ID, json.RawMessage(`{"sleep_ms":5}`), false); err != nil {
		p.fail()
		return
	}
	p.mu.Lock()
	pk := p.open[h.ID]
	delete(p.open, h.ID)
	pk.ResolvedAt, pk.How = time.Now(), "retry"
	p.done = append(p.done, *pk)
	p.mu.Unlock()
}

func (p *parker) fail() {
	p.mu.Lock()
	p.errs++
	p.mu.Unlock()
}

// parks returns every park seen, the unresolved ones last.
func (p *parker) parks() []check.Park {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]check.Park(nil), p.done...)
	for _, pk := range p.open {
		out = append(out, *pk)
	}
	return out
}

// checkedQueues are the queues whose offsets and dead letters the run
// checks: the load's and parkQueue.
func (h *harness) checkedQueues() []string {
	return append(h.queues[:len(h.queues):len(h.queues)], parkQueue)
}
