package worker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	drover "github.com/drover-dev/drover"
)

// Attempts live with the message (docs/decisions.md, "Issue 40: attempts
// live with the message" and "Issue 40: a first start is recorded without
// waiting"). Every start of a message is recorded in Redis
// (Store.RecordStarts: HINCRBY of the message's starts field, beside its
// envelope in the queue's :msg hash), so a move, a graceful stop or a kill -9 of the owner
// loses none; the attempt number a task sees (DROVER_ATTEMPT, m.Attempt) is
// the message's starts minus one, and a message whose starts exceed its
// max_attempts is not run (a worker stopped or crashed during its last
// attempt): it is parked or dead-lettered as if its last attempt had failed.
//
// The read returns each message's recorded starts with it
// (drover.LogEntry.Starts), and the queue is owned exclusively, so the
// owner knows a message's count without asking: what was recorded when it
// read, plus its own starts since. A start the owner knows to be the
// message's first — nothing recorded, none of its own, and the queue has
// committed since this owner claimed it, or a check found nothing
// unfinished in it (loopQuiet) — is sent without waiting (send): the task
// starts at once. Any other start (a retry, a message a previous owner
// started, any other start before the owner's first commit) waits for its
// record (record), whose reply is the exact count: a poison message that
// kills its worker is counted whichever start killed it (runMessage).
//
// The records of every queue's starts go together, as the reads do
// (read.go): a record that finds fewer than startsInFlight round trips in
// flight is sent at once; the records that arrive meanwhile go in the next
// round trip, all together.
//
// A first start sent without waiting is held for up to startHold before it
// leaves (docs/decisions.md, "Issue 43: a first start is held until its
// task ends"): a task that succeeds meanwhile drops it (drop), since a
// message that finished needs no count, and the start costs Redis nothing.
// Anything that needs the record ends the hold of every record pending: a
// start that waits for its record, a runner waiting for one it sent
// (settleStart, before a retry, a dead letter or a park), a trim
// (settled) and a queue's release (which settles them first). A crash leaves at most a hold's
// worth of first starts uncounted, as it left a round trip's before: such a
// message runs once more than counted, never forever (a start before the
// owner's first commit since its claim waits, unless the owner found the
// queue with nothing unfinished: the message that killed its worker is
// unfinished for the next owner).

// maxStartBatch is the most start records one round trip carries.
const maxStartBatch = 1024

// startsInFlight is how many round trips of start records are in flight at
// most (as readsInFlight).
const startsInFlight = 2

// startHold is how long a first start sent without waiting is held before
// it leaves, so that a short task's success can drop it: longer than an
// inline handler or a small subprocess takes here, and the bound on the
// first starts a crash leaves uncounted.
const startHold = 10 * time.Millisecond

// starter gathers the runners' start records. Its goroutines run while
// records wait and exit when none does: an idle worker holds none.
type starter struct {
	store Store
	clock drover.TimerClock // the hold's timers
	hold  time.Duration     // startHold; tests set their own

	mu      sync.Mutex
	pending []*startBatch // not sent yet, in order; only the last one grows
	live    []*startBatch // pending or in flight, in order (settled)
	seq     uint64        // the last batch's number
	senders int

	rounds, records int // round trips and records sent, for tests
}

// startBatch is the start records one round trip sends and, once done is
// closed, their results.
type startBatch struct {
	seq    uint64
	queues []string
	ids    []string
	// ctxs[i] is the context of a record its runner waits for: ended
	// before the batch is sent, the record is not sent. nil: a record sent
	// whatever happens (its task started).
	ctxs    []context.Context
	taken   bool   // the sender took it: every record in it gets a definite result
	skipped []bool // set by the sender: not sent (its context had ended)
	dropped []bool // dropped[i]: its task succeeded before the batch was taken (drop)
	// due is closed when the batch may leave before its hold ends: a
	// record in it is waited for, or it is full. born is when its first
	// record came.
	due    chan struct{}
	born   time.Time
	starts []int // each record's count (when err is nil and not skipped)
	err    error
	done   chan struct{}
}

// errStartDropped is the result of a record dropped before it left (drop):
// no one waits for it.
var errStartDropped = errors.New("start record dropped: its task succeeded before it was sent")

// startRecord is one record in its batch; the zero value is no record.
type startRecord struct {
	b *startBatch
	i int
}

func newStarter(s Store, clock drover.TimerClock) *starter {
	return &starter{store: s, clock: clock, hold: startHold}
}

// add puts a record in the batch that waits to be sent (a new one when none
// waits or the last is full) and makes sure a sender runs. A record its
// caller waits for (ctx not nil) ends the hold of every batch pending. s.mu
// is held.
func (s *starter) addLocked(ctx context.Context, queue, id string) startRecord {
	var b *startBatch
	if n := len(s.pending); n > 0 && len(s.pending[n-1].ids) < maxStartBatch {
		b = s.pending[n-1]
	} else {
		if n > 0 {
			s.pending[n-1].hurry() // full: it leaves now
		}
		s.seq++
		b = &startBatch{seq: s.seq, done: make(chan struct{}), due: make(chan struct{}), born: s.clock.Now()}
		s.pending = append(s.pending, b)
		s.live = append(s.live, b)
	}
	b.queues = append(b.queues, queue)
	b.ids = append(b.ids, id)
	b.ctxs = append(b.ctxs, ctx)
	if ctx != nil {
		s.hurryLocked(s.seq)
	}
	if s.senders < startsInFlight {
		s.senders++
		go s.run()
	}
	return startRecord{b: b, i: len(b.ids) - 1}
}

// hurry ends b's hold. The starter's lock is held.
func (b *startBatch) hurry() {
	select {
	case <-b.due:
	default:
		close(b.due)
	}
}

// hurryLocked ends the hold of every batch pending up to mark. s.mu is held.
func (s *starter) hurryLocked(mark uint64) {
	for _, b := range s.pending {
		if b.seq > mark {
			return
		}
		b.hurry()
	}
}

// send records one start of message id of queue and returns at once: the
// record is held for up to startHold and then sent with the other runners'
// records, whatever happens to the task meanwhile (it started), unless the
// task succeeded first (drop). wait tells its outcome.
func (s *starter) send(queue, id string) startRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(nil, queue, id)
}

// drop withdraws r, a start sent without waiting whose task succeeded: if
// its batch has not left yet, the record is not sent. A zero r, or one
// already sent, is left as it is (the trim waits for it: settled).
func (s *starter) drop(r startRecord) {
	if r.b == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.b.taken {
		return
	}
	for len(r.b.dropped) < len(r.b.ids) { // records came since the last drop
		r.b.dropped = append(r.b.dropped, false)
	}
	r.b.dropped[r.i] = true
}

// record records one start of message id of queue with the other runners'
// and returns the message's starts so far, this one included. A record
// whose ctx ends before it is sent is not sent (ctx's error is returned);
// once sent, the call waits for the round trip, bounded by writeTimeout:
// its outcome must be known before the task may start.
func (s *starter) record(ctx context.Context, queue, id string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	r := s.addLocked(ctx, queue, id)
	s.mu.Unlock()
	select {
	case <-r.b.done:
		return r.result()
	case <-ctx.Done():
	}
	s.mu.Lock()
	taken := r.b.taken
	s.mu.Unlock()
	if !taken {
		return 0, ctx.Err() // its sender sees ctx ended and skips it
	}
	<-r.b.done // in flight: its result is definite
	return r.result()
}

// wait ends the hold of r (and of the records before it), waits for its
// round trip (or for ctx to end) and returns the count the record returned.
// A zero r returns at once with no error.
func (s *starter) wait(ctx context.Context, r startRecord) (int, error) {
	if r.b == nil {
		return 0, nil
	}
	s.mu.Lock()
	if !r.b.taken {
		s.hurryLocked(r.b.seq)
	}
	s.mu.Unlock()
	select {
	case <-r.b.done:
		return r.result()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// result is r's outcome; r's batch is done.
func (r startRecord) result() (int, error) {
	b := r.b
	switch {
	case b.skipped != nil && b.skipped[r.i]:
		if ctx := b.ctxs[r.i]; ctx != nil {
			return 0, ctx.Err()
		}
		return 0, errStartDropped
	case b.err != nil:
		return 0, b.err
	}
	return b.starts[r.i], nil
}

// mark returns a mark of the records handed in so far, for settled.
func (s *starter) mark() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// settled waits until every record handed in before mark was taken has
// been sent and answered (or ctx ends): a trim, which deletes the fields
// of the messages it covers, then never runs ahead of a record of one of
// them, which would leave the field behind with no message. It costs
// nothing when those records are done, as they almost always are by then.
func (s *starter) settled(ctx context.Context, mark uint64) error {
	s.mu.Lock()
	s.hurryLocked(mark)
	s.mu.Unlock()
	for {
		s.mu.Lock()
		var b *startBatch
		if len(s.live) > 0 && s.live[0].seq <= mark {
			b = s.live[0]
		}
		s.mu.Unlock()
		if b == nil {
			return nil
		}
		select {
		case <-b.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// settledThrough ends the hold of the records handed in before mark and
// returns, without waiting, the highest mark whose records have all been
// answered: a trim that waits for mark may go when mark is at most that.
func (s *starter) settledThrough(mark uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hurryLocked(mark)
	if len(s.live) > 0 { // in order; a batch leaves live when answered
		return s.live[0].seq - 1
	}
	return s.seq
}

// run sends the waiting batches, a round trip at a time, until none waits.
func (s *starter) run() {
	for {
		s.mu.Lock()
		if len(s.pending) == 0 {
			s.senders--
			s.mu.Unlock()
			return
		}
		b := s.pending[0]
		if !s.holdOver(b) {
			s.mu.Unlock()
			continue // it waited: look again
		}
		s.pending = slices.Delete(s.pending, 0, 1)
		b.taken = true
		s.rounds++
		s.records += len(b.ids)
		s.mu.Unlock()
		s.sendBatch(b)
		s.mu.Lock()
		if i := slices.Index(s.live, b); i >= 0 {
			s.live = slices.Delete(s.live, i, i+1)
		}
		s.mu.Unlock()
		close(b.done)
	}
}

// holdOver reports whether b, the first batch pending, may leave now: its
// hold is over, it is due (hurry), or every record in it was dropped. If
// not, it waits, with s.mu released, for the first of these, and returns
// false: the caller looks again. s.mu is held.
func (s *starter) holdOver(b *startBatch) bool {
	if len(b.dropped) == len(b.ids) && !slices.Contains(b.dropped, false) {
		return true // nothing left to send: no round trip
	}
	left := s.hold - s.clock.Now().Sub(b.born)
	if left <= 0 {
		return true
	}
	select {
	case <-b.due:
		return true
	default:
	}
	s.mu.Unlock()
	t := s.clock.NewTimer(left)
	select {
	case <-t.C():
	case <-b.due:
	}
	t.Stop()
	s.mu.Lock()
	return false
}

// sendBatch records b in one call; a record whose runner stopped waiting
// meanwhile is skipped, not sent.
func (s *starter) sendBatch(b *startBatch) {
	queues, ids := b.queues, b.ids
	var live []int // indexes sent, when some are skipped
	for i, ctx := range b.ctxs {
		if (ctx != nil && ctx.Err() != nil) || (i < len(b.dropped) && b.dropped[i]) {
			if b.skipped == nil {
				b.skipped = make([]bool, len(b.ids))
				live = make([]int, 0, len(b.ids))
				for j := range i {
					live = append(live, j)
				}
			}
			b.skipped[i] = true
			continue
		}
		if live != nil {
			live = append(live, i)
		}
	}
	if live != nil {
		queues, ids = make([]string, len(live)), make([]string, len(live))
		for k, i := range live {
			queues[k], ids[k] = b.queues[i], b.ids[i]
		}
		if len(live) == 0 {
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	starts, err := s.store.RecordStarts(ctx, queues, ids)
	cancel()
	if err == nil && len(starts) != len(ids) {
		err = errShortRecordStarts
	}
	if err != nil {
		b.err = err
		return
	}
	if live == nil {
		b.starts = starts
		return
	}
	b.starts = make([]int, len(b.ids))
	for k, i := range live {
		b.starts[i] = starts[k]
	}
}

// stats returns the round trips and records sent so far.
func (s *starter) stats() (rounds, records int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rounds, s.records
}
