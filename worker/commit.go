package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
)

// committer commits the offsets of the worker's queues: one per worker, not
// one per queue (DESIGN.md §10). Queue loops hand it their done offsets
// (offer); every CommitInterval it commits every queue that progressed, all
// at once, so the coordinator's coalescing sends them to ZooKeeper as one
// multi (coordinator/multi_batch.go), each operation still checking its own
// claim's fencing version. A fenced-out queue is dropped alone: its loop is
// lost, the others commit. After a successful commit the queue is trimmed,
// the outcome records riding with the trim.
//
// Its goroutine runs while offsets wait and exits when none does: an idle
// worker commits nothing and holds no committer goroutine.
type committer struct {
	w *Worker

	mu       sync.Mutex
	cond     *sync.Cond                // broadcast when a flush ends
	pending  map[*queueLoop]*commitReq // offered, not sent yet
	inflight map[*queueLoop]bool       // being committed now
	running  bool                      // the flush goroutine runs
}

// commitReq is one queue's offset to commit, with the outcome records of the
// messages it covers.
type commitReq struct {
	off      drover.Offset
	outcomes []drover.Outcome
}

func newCommitter(w *Worker) *committer {
	c := &committer{w: w, pending: map[*queueLoop]*commitReq{}, inflight: map[*queueLoop]bool{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// offer queues l's offset (a later offer of the same queue replaces the
// offset and adds its records) for the next flush. It never blocks on I/O.
func (c *committer) offer(l *queueLoop, off drover.Offset, outcomes []drover.Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mergeLocked(l, &commitReq{off: off, outcomes: outcomes})
	if !c.running {
		c.running = true
		go c.run()
	}
}

// mergeLocked adds r to what waits for l; the records stay bounded by the
// queue's record bound (the oldest go first, as they would in Redis).
func (c *committer) mergeLocked(l *queueLoop, r *commitReq) {
	p := c.pending[l]
	if p == nil {
		c.pending[l] = r
		return
	}
	if r.off.Position > p.off.Position {
		p.off = r.off
	}
	p.outcomes = append(p.outcomes, r.outcomes...)
	if max := l.config().Outcomes.MaxRecords(); len(p.outcomes) > max {
		p.outcomes = p.outcomes[len(p.outcomes)-max:]
	}
}

// withdraw takes back what waits for l, after waiting for a flush that is
// committing l: the queue is shutting down and its release carries the
// final offset. It returns the records that were not trimmed yet and
// whether anything was waiting.
func (c *committer) withdraw(l *queueLoop) ([]drover.Outcome, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.inflight[l] {
		c.cond.Wait()
	}
	r, ok := c.pending[l]
	if !ok {
		return nil, false
	}
	delete(c.pending, l)
	return r.outcomes, true
}

// run flushes every CommitInterval until nothing waits. The interval runs
// from one flush's start to the next: timed from a flush's end, every
// flush's own duration added to the wait of the offsets behind it (the
// commit tail a drained queue waits for: up to an interval plus a flush).
func (c *committer) run() {
	clk := c.w.cfg.Clock
	t := clk.NewTimer(c.w.cfg.CommitInterval)
	defer t.Stop()
	for {
		<-t.C()
		next := clk.Now().Add(c.w.cfg.CommitInterval)
		c.mu.Lock()
		if c.w.suspended.Load() || len(c.pending) == 0 {
			// While the session is suspended nothing is committed: the
			// offsets wait (a lost session ends the queues, which withdraw).
			if len(c.pending) == 0 {
				c.running = false
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			t.Reset(c.w.cfg.CommitInterval)
			continue
		}
		batch := c.pending
		c.pending = map[*queueLoop]*commitReq{}
		for l := range batch {
			c.inflight[l] = true
		}
		c.mu.Unlock()

		c.flush(batch)

		c.mu.Lock()
		for l := range batch {
			delete(c.inflight, l)
		}
		c.cond.Broadcast()
		c.mu.Unlock()
		// A flush longer than the interval is followed by the next one at
		// once: writes are then paced by the flushes themselves.
		t.Reset(max(next.Sub(clk.Now()), 0))
	}
}

// flush commits every queue of batch at once and waits for all: the commits
// reach the coordinator together, which sends them as one multi. A failed
// commit that did not lose the queue is offered again for the next flush.
// Then the committed queues are trimmed: with a BatchTrimmer all in one
// round trip per few hundred queues, so that a flush of 500 queues does
// not take every connection of the Redis client (the queues' reads waited
// behind the trims: 213 of 233 goroutines at the client's pool were trims
// with 10,000 busy queues).
func (c *committer) flush(batch map[*queueLoop]*commitReq) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done []*queueLoop
	)
	for l, r := range batch {
		if l.lost.Load() {
			continue // another member owns it: write nothing
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.commit(l, r) {
				mu.Lock()
				done = append(done, l)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(done) == 0 {
		return
	}
	bt, ok := c.w.cfg.Log.(BatchTrimmer)
	if !ok {
		for _, l := range done {
			r := batch[l]
			l.trim(r.off.Position, r.outcomes)
		}
		return
	}
	reqs := make([]drover.TrimRequest, len(done))
	for i, l := range done {
		r, cfg := batch[l], l.config()
		reqs[i] = drover.TrimRequest{Queue: l.name, Offset: r.off.Position, Retention: cfg.Retention.Std(), Outcomes: r.outcomes, Policy: cfg.Outcomes}
	}
	// Each part has its own deadline: a flush of thousands of queues is
	// several round trips, and one deadline for all failed the last ones.
	for start := 0; start < len(reqs); start += trimPart {
		part := reqs[start:min(start+trimPart, len(reqs))]
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		for i, err := range bt.TrimMany(ctx, part) {
			if err != nil {
				done[start+i].logger().Warn("trim queue", "offset", part[i].Offset, "error", err)
			}
		}
		cancel()
	}
}

// trimPart is the most queues trimmed under one deadline.
const trimPart = 256

// commit commits one queue's offset; it reports whether the offset is
// committed (the caller trims what it covers).
func (c *committer) commit(l *queueLoop, r *commitReq) bool {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	start := time.Now()
	err := l.claim.Commit(ctx, r.off)
	c.w.cfg.Metrics.AddSample(metrics.CommitDuration, ms(time.Since(start)))
	if err != nil {
		if isLost(err) {
			l.lose(fmt.Sprintf("commit of %d refused", r.off.Position), err)
			return false
		}
		l.logger().Warn("commit offset", "offset", r.off.Position, "error", err)
		c.mu.Lock()
		c.mergeLocked(l, r) // again at the next flush
		c.mu.Unlock()
		return false
	}
	c.w.cfg.Metrics.IncrCounter(metrics.CommitsTotal, 1, metrics.L("queue", l.name))
	l.committed.Store(int64(r.off.Position))
	l.mu.Lock()
	l.snap.Committed = r.off.Position
	l.mu.Unlock()
	return true
}
