package worker

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/shrink"
)

// idleScheduler is the worker's one goroutine for all its parked queues
// (DESIGN.md §10), in place of a timer and a poll per queue:
//
//   - due times: a heap of queues keyed by the earliest due time of their
//     delayed messages, learnt from wake-ups (an enqueue of delayed
//     messages), from promotions (the next one due) and from retries; when
//     a queue's time comes it is signalled to promote, then read. A
//     delayed message costs one heap entry, whatever the number of queues.
//   - the backstop against lost wake-ups: every PollInterval, and at once
//     after MissedWakeups (at most once per PollInterval: later reports
//     wait for the interval to end and share one check), one amortised
//     check of every parked queue
//     (Store.CheckQueues: one script call per 256 queues, in one pipeline). A
//     queue with a message after its fetched offset is signalled; its next
//     due time goes to the heap.
//   - queues just started: a started queue begins parked and is checked at
//     once, with the others started meanwhile, so that claiming 25,000
//     queues costs a hundred script calls and a goroutine for each queue
//     that has messages — not three round trips and a goroutine per queue.
//
// The goroutine runs while the worker owns queues and exits when it owns
// none. A backstop pass runs on a goroutine of its own (one at a time), so
// that queues just started and due ones are not held behind a pass over
// tens of thousands of parked queues.
type idleScheduler struct {
	w *Worker

	mu       sync.Mutex
	due      dueHeap
	byQueue  map[string]*dueItem
	byToken  map[string]*dueItem // rate-held queues' next token (ratelimit.go)
	checkNow bool
	fresh    []string // queues started since the last pass: check them now
	running  bool
	kick     chan struct{} // something changed: look again

	// checks counts backstop passes, passes the scheduler's rounds (tests).
	checks int
	passes int

	// checking is set while a backstop pass runs (on its own goroutine,
	// one at a time); passWaiting, when another came due meanwhile: the
	// running one pokes the loop as it ends. verifyMore is what the last
	// pass reported.
	checking    bool
	passWaiting bool
	verifyMore  bool

	// pass and fresh are the buffers of the backstop pass and of the
	// checks of queues just started: each is touched by one goroutine at
	// a time (the pass's, the run goroutine) and holds no queue between
	// checks.
	pass, freshBufs passBuffers
}

// passBuffers are a check's buffers, reused from check to check so that a
// pass over 25,000 parked queues allocates nothing per queue (two maps and
// a slice of them were 2 MB of garbage a second; the Log's map of heads,
// 1.3 MB a pass more).
type passBuffers struct {
	parked    []parkedQueue
	names     []string
	positions []drover.Position // the fetched offsets of a full check
	heads     []drover.Position
}

// parkedQueue is a parked queue as a backstop pass found it.
type parkedQueue struct {
	loop    *queueLoop
	fetched drover.Position // the position it had fetched when parked
}

// dueItem is a queue's earliest known due time.
type dueItem struct {
	queue string
	at    time.Time
	index int
	token bool // a token of the queue's rate limit is due: signal, do not promote
}

type dueHeap []*dueItem

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *dueHeap) Push(x any)        { it := x.(*dueItem); it.index = len(*h); *h = append(*h, it) }
func (h *dueHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

func newIdleScheduler(w *Worker) *idleScheduler {
	return &idleScheduler{w: w, byQueue: map[string]*dueItem{}, byToken: map[string]*dueItem{}, kick: make(chan struct{}, 1)}
}

// tokenAt schedules queue, held back by its rate limit, to be signalled at
// due (when its next token is due), unless an earlier time is scheduled
// already. Unlike at, the queue is not asked to promote. It never blocks.
func (s *idleScheduler) tokenAt(queue string, due time.Time) {
	s.schedule(s.byToken, queue, due, true)
}

// at schedules queue to be signalled (to promote) at due, unless an earlier
// time is scheduled already. It never blocks.
func (s *idleScheduler) at(queue string, due time.Time) {
	s.schedule(s.byQueue, queue, due, false)
}

// schedule keeps in byName (byQueue or byToken) the earliest due time of
// queue, and wakes the scheduler when it became the first due.
func (s *idleScheduler) schedule(byName map[string]*dueItem, queue string, due time.Time, token bool) {
	s.mu.Lock()
	it := byName[queue]
	switch {
	case it == nil:
		it = &dueItem{queue: queue, at: due, token: token}
		byName[queue] = it
		heap.Push(&s.due, it)
	case due.Before(it.at):
		it.at = due
		heap.Fix(&s.due, it.index)
	default:
		s.mu.Unlock()
		return
	}
	first := s.due[0] == it
	s.mu.Unlock()
	if first {
		s.poke()
	}
}

// started asks for a check of a queue just started (parked).
func (s *idleScheduler) started(queue string) {
	s.mu.Lock()
	s.fresh = append(s.fresh, queue)
	s.mu.Unlock()
	s.poke()
}

// missed asks for a backstop check at once.
func (s *idleScheduler) missed() {
	s.mu.Lock()
	s.checkNow = true
	s.mu.Unlock()
	s.poke()
}

func (s *idleScheduler) poke() { wakeUp(s.kick) }

// ensureRunning starts the goroutine if it does not run; w.mu is held.
func (s *idleScheduler) ensureRunning() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		s.running = true
		go s.run()
	}
}

// run signals due queues and runs the backstop until the worker owns no
// queue.
func (s *idleScheduler) run() {
	c := s.w.cfg
	nextCheck := c.Clock.Now().Add(c.PollInterval)
	var lastFull time.Time // the last full check after missed wake-ups
	t := c.Clock.NewTimer(c.PollInterval)
	defer t.Stop()
	for {
		now := c.Clock.Now()
		s.mu.Lock()
		var fire, tokens []string
		for len(s.due) > 0 && !s.due[0].at.After(now) {
			it := heap.Pop(&s.due).(*dueItem)
			if it.token {
				delete(s.byToken, it.queue)
				tokens = append(tokens, it.queue)
				continue
			}
			delete(s.byQueue, it.queue)
			fire = append(fire, it.queue)
		}
		if s.verifyMore {
			// The last pass left parked queues to verify: the next soon.
			s.verifyMore = false
			nextCheck = now.Add(verifyPause)
		}
		// Missed wake-ups make a full check at once, but at most one per
		// PollInterval: a reader behind under load reports Missed again
		// and again, and a full check of every parked queue per report
		// loads Redis more, which puts the reader further behind.
		wantFull := s.checkNow && !now.Before(lastFull.Add(c.PollInterval))
		check := wantFull || !now.Before(nextCheck)
		if check && s.checking {
			s.passWaiting, check = true, false // after the running one
		}
		full := check && wantFull
		if full {
			s.checkNow = false
			lastFull = now
		}
		if check {
			s.checking = true
		}
		fresh := s.fresh
		s.fresh = nil
		s.mu.Unlock()
		// A full pass covers the queues just started; a periodic one reads
		// heads only, which cannot see delayed messages: they get their
		// full check here.
		if len(fresh) > 0 && !full {
			s.checkFresh(fresh)
		}
		for _, q := range fire {
			if l := s.w.loop(q); l != nil {
				l.dueNow.Store(true)
				l.signal()
			}
		}
		for _, q := range tokens {
			if l := s.w.loop(q); l != nil {
				l.signal()
			}
		}
		if check {
			// The pass runs beside this loop: a pass over 50,000 parked
			// queues took up to half a second on a loaded member, and the
			// queues started meanwhile waited for it before their first
			// check (docs/decisions.md, "Issue 40: where a new key's
			// first start waits").
			nextCheck = c.Clock.Now().Add(c.PollInterval)
			go s.runPass(full)
		}

		s.mu.Lock()
		s.passes++
		s.mu.Unlock()

		s.w.mu.Lock()
		if len(s.w.queues) == 0 {
			s.mu.Lock()
			s.running = false
			s.mu.Unlock()
			s.w.mu.Unlock()
			return
		}
		s.w.mu.Unlock()

		s.mu.Lock()
		var wait time.Duration
		switch {
		case s.verifyMore:
			wait = 0
		case s.passWaiting:
			// A pass came due while one runs: the running one's end pokes
			// the loop, which must not spin meanwhile.
			wait = c.PollInterval
		default:
			wait = nextCheck.Sub(c.Clock.Now())
			if s.checkNow {
				wait = min(wait, lastFull.Add(c.PollInterval).Sub(c.Clock.Now()))
			}
		}
		if len(s.due) > 0 {
			if d := s.due[0].at.Sub(c.Clock.Now()); d < wait {
				wait = d
			}
		}
		s.mu.Unlock()
		t.Reset(max(wait, 0))
		select {
		case <-t.C():
		case <-s.kick:
		}
	}
}

// runPass is one backstop pass on its own goroutine; the run goroutine
// starts the next once it has ended.
func (s *idleScheduler) runPass(full bool) {
	more := s.check(full)
	s.w.releaseIfQuiet(s.w.cfg.Clock.Now())
	s.mu.Lock()
	s.checking, s.verifyMore = false, more
	wake := more || s.passWaiting
	s.passWaiting = false
	s.mu.Unlock()
	if wake {
		s.poke()
	}
}

// verifyPerPass is the most parked queues a pass starts to verify their
// claims after a pause of all queues, a suspension or a freeze: verifying
// 25,000 claims is spread over passes rather than 25,000 goroutines at once.
const verifyPerPass = 500

// verifyPause is how soon the next batch of verifications starts.
const verifyPause = 50 * time.Millisecond

// check is the amortised backstop: one check of every parked queue after
// its fetched offset. The periodic pass reads only the queues' heads
// (Store.QueueHeads: a key lookup per queue); a full pass (queues just
// started, after missed wake-ups) also learns their delayed messages' due
// times (Store.CheckQueues). Paused queues are left out (a wake-up, or the end of
// the pause, starts them) unless they were just started. Parked queues that
// slept through a pause of all queues (or a suspension, or a freeze) are
// started instead, up to verifyPerPass: they verify their claims (an
// offset may have been reset meanwhile) and read; the next pass, at once
// while some remain, takes the next batch.
//
// It reports whether parked queues remain to verify.
func (s *idleScheduler) check(full bool) bool {
	b := &s.pass
	parked := b.parked[:0]
	defer func() { b.parked = reuse(parked) }() // keep no loop alive until the next pass
	var verify []*queueLoop
	gen := s.w.blockGen.Load()
	s.w.mu.Lock()
	for q, l := range s.w.queues {
		if !l.parked() || (s.w.blocked(q) && l.checked.Load()) {
			continue
		}
		if l.parkedGen.Load() != gen && !s.w.blocked(q) {
			verify = append(verify, l)
			continue
		}
		parked = append(parked, parkedQueue{loop: l, fetched: drover.Position(l.parkedFetched.Load())})
	}
	s.w.mu.Unlock()
	more := len(verify) > verifyPerPass
	if more {
		verify = verify[:verifyPerPass]
	}
	for _, l := range verify {
		l.signal()
	}
	if !full {
		s.checkHeads(b, parked)
		return more
	}
	s.checkLoops(b, parked)
	return more
}

// checkHeads is the periodic pass: one read of the heads of the parked
// queues, waking those whose head is past their fetched position. A queue
// is woken once per head: one that found nothing to read (the message was
// removed meanwhile) is not woken again until its head moves. It allocates
// nothing per queue: the names it reads go in b, reused.
func (s *idleScheduler) checkHeads(b *passBuffers, parked []parkedQueue) {
	s.countCheck()
	if len(parked) == 0 {
		return
	}
	names := b.names[:0]
	defer func() { b.names = reuse(names) }()
	for _, p := range parked {
		names = append(names, p.loop.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	heads, err := s.w.cfg.Store.QueueHeads(ctx, names, b.heads[:0])
	if err == nil && len(heads) != len(parked) {
		err = fmt.Errorf("%d heads for %d queues", len(heads), len(parked))
	}
	if err != nil {
		s.w.cfg.Logger.Warn("check of the parked queues failed; checking again next poll interval", "queues", len(names), "error", err)
		return
	}
	defer func() { b.heads = reuse(heads) }()
	for i, p := range parked {
		h := heads[i]
		// Against the queue as it is now, not as the pass listed it: the
		// heads of thousands of parked queues come back hundreds of ms
		// later on a loaded member, and a key that took its next message
		// from its wake-up meanwhile (parked again after it, or running
		// it) has nothing to read. A running queue parks and is checked
		// by the next pass. In a sparse fleet these reads, each finding
		// nothing, were a read for every 25 messages (docs/decisions.md,
		// "Issue 43: a new key's first message comes with its wake-up").
		l := p.loop
		if h <= p.fetched || !l.parked() || int64(h) <= l.parkedFetched.Load() || int64(h) <= l.seenHead.Load() {
			continue
		}
		l.seenHead.Store(int64(h))
		l.signal()
	}
}

// reuse returns a pass's buffer emptied for the next pass (its elements
// zeroed: it keeps no loop or name alive), or nil when this pass used at
// most a quarter of a large buffer: a worker that owned 50,000 queues
// during a churn and 10,000 after it keeps no buffers of 50,000
// (shrink.MinPeak; docs/decisions.md, "Issue 40: an idle worker's memory
// after a churn"). The next pass allocates what it needs.
func reuse[T any](buf []T) []T {
	clear(buf)
	if cap(buf) >= shrink.MinPeak && 4*len(buf) <= cap(buf) {
		return nil
	}
	return buf[:0]
}

// checkFresh checks the queues just started.
func (s *idleScheduler) checkFresh(queues []string) {
	b := &s.freshBufs
	parked := b.parked[:0]
	defer func() { b.parked = reuse(parked) }()
	s.w.mu.Lock()
	for _, q := range queues {
		if l := s.w.queues[q]; l != nil && l.parked() {
			parked = append(parked, parkedQueue{loop: l, fetched: drover.Position(l.parkedFetched.Load())})
		}
	}
	s.w.mu.Unlock()
	s.checkLoops(b, parked)
}

// checkLoops checks the parked queues after their fetched offsets in one
// amortised call (the full pass: rare), signals those with a message after
// their offset and schedules their due times. Like the periodic pass it
// passes the queues and offsets in the scheduler's buffers and matches the
// results by position: no map per pass.
//
// A queue's first check since its claim (not checked yet: the claims'
// check, or a full pass that covers it) also owes its trim when its log
// still holds messages at or before the offset: its last owner lost it
// before trimming, and a key that stays quiet would otherwise keep them
// for good, so that it never counts as empty and its family never retires
// it (committer.oweClaimed).
func (s *idleScheduler) checkLoops(b *passBuffers, parked []parkedQueue) {
	s.countCheck()
	if len(parked) == 0 {
		return
	}
	names, positions := b.names[:0], b.positions[:0]
	defer func() {
		b.names, b.positions = reuse(names), reuse(positions)
	}()
	for _, p := range parked {
		names = append(names, p.loop.name)
		positions = append(positions, p.fetched)
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	res, err := s.w.cfg.Store.CheckQueues(ctx, names, positions)
	if err == nil {
		err = checksInOrder(res, names)
	}
	if err != nil {
		// The next pass checks again: waking every queue would only
		// repeat the failing reads one by one.
		s.w.cfg.Logger.Warn("check of the parked queues failed; checking again next poll interval", "queues", len(parked), "error", err)
		s.mu.Lock()
		for _, p := range parked {
			if !p.loop.checked.Load() {
				s.fresh = append(s.fresh, p.loop.name)
			}
		}
		s.mu.Unlock()
		return
	}
	for i, r := range res {
		l := parked[i].loop
		if !r.Ready {
			// Nothing after the offset it had fetched: every message a
			// previous owner could have started (at or before the head
			// when this owner claimed the queue) is at or before that
			// offset, read with its starts, so the queue counts as caught
			// up with them, as after a read that found nothing: its next
			// message can come with its wake-up. If all it fetched is
			// committed too (nothing read since the claim, say), nothing
			// in the log is unfinished: its next start need not wait for
			// its record (loopQuiet). A key claimed while quiet (a new
			// key, or one of a fleet turning busy after an idle spell)
			// saves a read, and a round trip on a pool slot, before its
			// first task (docs/decisions.md, "Issue 43: a key claimed
			// quiet takes its first message from its wake-up"). Set
			// before checked: whoever sees the check sees its flags.
			f := uint32(loopStartsRead)
			if l.committed.Load() == int64(parked[i].fetched) {
				f |= loopQuiet
			}
			l.flags.Or(f)
		}
		claimed := !l.checked.Swap(true) // its first check since its claim
		l.dueKnown.Store(true)
		if !r.NextDue.IsZero() {
			s.at(r.Queue, r.NextDue)
			l.countsMoved() // delayed messages its owner may not have seen enqueued
		}
		if claimed && r.Stale {
			s.w.commits.oweClaimed(l)
		}
		if r.Ready {
			l.signal()
		}
	}
}

// checksInOrder reports an error unless res holds one check per queue, in
// the order of queues, as Store.CheckQueues promises.
func checksInOrder(res []drover.QueueCheck, queues []string) error {
	if len(res) != len(queues) {
		return fmt.Errorf("%d checks for %d queues", len(res), len(queues))
	}
	for i, r := range res {
		if r.Queue != queues[i] {
			return fmt.Errorf("check %d is of %s, want %s", i, r.Queue, queues[i])
		}
	}
	return nil
}

// countCheck counts a backstop check, for checkCount.
func (s *idleScheduler) countCheck() {
	s.mu.Lock()
	s.checks++
	s.mu.Unlock()
}

// checkCount returns how many backstop checks ran.
func (s *idleScheduler) checkCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checks
}

// passRunning reports whether a backstop pass runs (tests).
func (s *idleScheduler) passRunning() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checking
}

// passCount returns how many rounds the scheduler ran.
func (s *idleScheduler) passCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.passes
}
