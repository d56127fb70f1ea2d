package worker

import (
	"context"
	"errors"
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

// reader gathers the queue loops' reads into shared round trips (a
// coalescer of ReadMany calls, coalesce.go): a lone read waits for
// nothing, reads that arrive while inFlight round trips are in flight go
// in the next, all together.
type reader struct {
	coalescer[drover.ReadRequest, drover.ReadResult]
	br      Store
	metrics metrics.Recorder
	stages  *stages
}

func newReader(br Store, m metrics.Recorder, st *stages) *reader {
	r := &reader{br: br, metrics: m, stages: st}
	r.coalescer = coalescer[drover.ReadRequest, drover.ReadResult]{send: r.send, limit: maxReadBatch, inFlight: readsInFlight}
	return r
}

// read returns what ReadAfter(queue, after, n) returns, read together with
// the other loops' reads; starts asks for the entries' recorded starts
// (drover.ReadRequest.Starts). A read whose ctx ends before it is sent is not
// sent: a queue lost (stopped) meanwhile reads nothing. Once sent, the call
// waits for the round trip, which is bounded by writeTimeout.
func (r *reader) read(ctx context.Context, queue string, after drover.Position, n int, starts bool) ([]drover.LogEntry, error) {
	res, err := r.do(ctx, drover.ReadRequest{Queue: queue, After: after, N: n, Starts: starts})
	if err != nil {
		return nil, err
	}
	return res.Entries, res.Err
}

// send reads the live calls in one ReadMany.
func (r *reader) send(live []*coalesced[drover.ReadRequest, drover.ReadResult]) {
	reqs := make([]drover.ReadRequest, len(live))
	for i, c := range live {
		reqs[i] = c.req
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
	}
}

// errShortReadMany: a Store's ReadMany returned fewer results than requests.
var errShortReadMany = errors.New("read many: fewer results than reads")

// errShortPromoteMany: a Store's PromoteMany returned fewer results than
// requests.
var errShortPromoteMany = errors.New("promote many: fewer results than promotions")
