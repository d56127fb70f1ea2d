package worker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
)

// maxReadBatch is the most reads one round trip of the reader carries.
const maxReadBatch = 1024

// readsInFlight is how many round trips the reader keeps in flight at most.
// With one, a read queued just after a round trip started waited for all of
// it before its own: with 10,000 busy queues the stage counters showed
// reads waiting 10 ms on average for a 17 ms round trip (docs/decisions.md,
// "Busy runtime latency").
const readsInFlight = 2

// reader gathers the queue loops' reads ("group commit", as the enqueue
// coalescer does for producers): a read that finds fewer than inFlight
// round trips in flight starts one at once, so a lone read waits for
// nothing; reads that arrive while inFlight are in flight go in the next,
// all together. Its goroutines run while reads wait and exit when none
// does: an idle worker holds none.
type reader struct {
	br       Store
	metrics  metrics.Recorder
	stages   *stages
	inFlight int // the most round trips in flight (readsInFlight)

	mu      sync.Mutex
	pending []*readCall
	senders int // goroutines sending round trips

	rounds, reads int // round trips and reads sent, for tests
}

// readCall is one loop's read and, once done is closed, its result.
type readCall struct {
	ctx  context.Context
	req  drover.ReadRequest
	res  drover.ReadResult
	done chan struct{}
	at   time.Time // when it was handed to the reader
}

func newReader(br Store, m metrics.Recorder, st *stages) *reader {
	return &reader{br: br, metrics: m, stages: st, inFlight: readsInFlight}
}

// read returns what ReadAfter(queue, after, n) returns, read together with
// the other loops' reads; starts asks for the entries' recorded starts
// (drover.ReadRequest.Starts). A read whose ctx ends before it is sent is not
// sent: a queue lost (stopped) meanwhile reads nothing. Once sent, the call
// waits for the round trip, which is bounded by writeTimeout.
func (r *reader) read(ctx context.Context, queue string, after drover.Position, n int, starts bool) ([]drover.LogEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &readCall{ctx: ctx, req: drover.ReadRequest{Queue: queue, After: after, N: n, Starts: starts}, done: make(chan struct{}), at: time.Now()}
	r.mu.Lock()
	r.pending = append(r.pending, c)
	if r.senders < max(r.inFlight, 1) {
		r.senders++
		go r.run()
	}
	r.mu.Unlock()
	select {
	case <-c.done:
		return c.res.Entries, c.res.Err
	case <-ctx.Done():
	}
	r.mu.Lock()
	if i := slices.Index(r.pending, c); i >= 0 {
		r.pending = slices.Delete(r.pending, i, i+1)
		r.mu.Unlock()
		return nil, ctx.Err()
	}
	r.mu.Unlock()
	<-c.done // in flight: its result is definite
	return c.res.Entries, c.res.Err
}

// run sends the waiting reads, a round trip at a time, until none waits;
// up to inFlight goroutines run it at once.
func (r *reader) run() {
	for {
		r.mu.Lock()
		if len(r.pending) == 0 {
			r.senders--
			r.mu.Unlock()
			return
		}
		n := min(len(r.pending), maxReadBatch)
		batch := slices.Clone(r.pending[:n])
		r.pending = slices.Delete(r.pending, 0, n)
		r.rounds++
		r.reads += n
		r.mu.Unlock()
		r.send(batch)
	}
}

// send reads batch in one call; a read whose loop stopped meanwhile is
// answered with its context's error and not sent.
func (r *reader) send(batch []*readCall) {
	reqs := make([]drover.ReadRequest, 0, len(batch))
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.res.Err = err
			close(c.done)
			continue
		}
		reqs = append(reqs, c.req)
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	start := time.Now()
	res := r.br.ReadMany(ctx, reqs)
	end := time.Now()
	// A sample per round trip, not per queue read: sampled per read it
	// was 3% of a busy worker's CPU (a profile at 1,500 reads/s).
	r.metrics.AddSample(metrics.FetchDuration, ms(end.Sub(start)))
	cancel()
	if st := r.stages; st != nil {
		for i, c := range live {
			st.readQueued.add(start.Sub(c.at))
			st.readTrip.add(end.Sub(start))
			if i < len(res) {
				for _, e := range res[i].Entries {
					st.enqueueToRead.add(sinceEnqueue(end, e.Position))
				}
			}
		}
	}
	for i, c := range live {
		if i < len(res) {
			c.res = res[i]
		} else {
			c.res.Err = errShortReadMany
		}
		close(c.done)
	}
}

// stats returns the round trips and reads sent so far.
func (r *reader) stats() (rounds, reads int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rounds, r.reads
}

// errShortReadMany: a Store's ReadMany returned fewer results than requests.
var errShortReadMany = errors.New("read many: fewer results than reads")
