package worker

import (
	"context"
	"slices"
	"sync"
)

// Attempts live with the message (docs/decisions.md, "Issue 40: attempts
// live with the message"). Before each start of a message, its runner
// records the start in Redis (Store.RecordStarts: HINCRBY of the message's
// field in the queue's :attempts hash) and waits for the record: the count
// it gets back is the message's starts so far, whichever workers ran it,
// so a move, a graceful stop or a kill -9 of the owner loses none. The
// attempt number a task sees (DROVER_ATTEMPT, m.Attempt) is that count
// minus one; a message whose count exceeds its max_attempts is not run
// (a worker stopped or crashed during its last attempt): it is parked or
// dead-lettered as if its last attempt had failed.
//
// The records of every queue's starts go together, as the reads do
// (read.go): a start that finds fewer than startsInFlight round trips in
// flight sends at once, so a lone start waits for one round trip; the
// starts that arrive meanwhile go in the next, all together.

// maxStartBatch is the most start records one round trip carries.
const maxStartBatch = 1024

// startsInFlight is how many round trips of start records are in flight at
// most (as readsInFlight).
const startsInFlight = 2

// starter gathers the runners' start records. Its goroutines run while
// records wait and exit when none does: an idle worker holds none.
type starter struct {
	store Store

	mu      sync.Mutex
	pending []*startCall
	senders int

	rounds, records int // round trips and records sent, for tests
}

// startCall is one start to record and, once done is closed, its result.
type startCall struct {
	ctx    context.Context
	queue  string
	id     string
	starts int
	err    error
	done   chan struct{}
}

func newStarter(s Store) *starter { return &starter{store: s} }

// record records one start of message id of queue with the other runners'
// and returns the message's starts so far, this one included. A record
// whose ctx ends before it is sent is not sent (ctx's error is returned);
// once sent, the call waits for the round trip, bounded by writeTimeout:
// its outcome must be known before the task may start.
func (s *starter) record(ctx context.Context, queue, id string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c := &startCall{ctx: ctx, queue: queue, id: id, done: make(chan struct{})}
	s.mu.Lock()
	s.pending = append(s.pending, c)
	if s.senders < startsInFlight {
		s.senders++
		go s.run()
	}
	s.mu.Unlock()
	select {
	case <-c.done:
		return c.starts, c.err
	case <-ctx.Done():
	}
	s.mu.Lock()
	if i := slices.Index(s.pending, c); i >= 0 {
		s.pending = slices.Delete(s.pending, i, i+1)
		s.mu.Unlock()
		return 0, ctx.Err()
	}
	s.mu.Unlock()
	<-c.done // in flight: its result is definite
	return c.starts, c.err
}

// run sends the waiting records, a round trip at a time, until none waits.
func (s *starter) run() {
	for {
		s.mu.Lock()
		if len(s.pending) == 0 {
			s.senders--
			s.mu.Unlock()
			return
		}
		n := min(len(s.pending), maxStartBatch)
		batch := slices.Clone(s.pending[:n])
		s.pending = slices.Delete(s.pending, 0, n)
		s.rounds++
		s.records += n
		s.mu.Unlock()
		s.send(batch)
	}
}

// send records batch in one call; a record whose runner stopped meanwhile
// is answered with its context's error and not sent.
func (s *starter) send(batch []*startCall) {
	queues := make([]string, 0, len(batch))
	ids := make([]string, 0, len(batch))
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		queues = append(queues, c.queue)
		ids = append(ids, c.id)
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	starts, err := s.store.RecordStarts(ctx, queues, ids)
	cancel()
	if err == nil && len(starts) != len(live) {
		err = errShortRecordStarts
	}
	for i, c := range live {
		if err != nil {
			c.err = err
		} else {
			c.starts = starts[i]
		}
		close(c.done)
	}
}

// stats returns the round trips and records sent so far.
func (s *starter) stats() (rounds, records int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rounds, s.records
}
