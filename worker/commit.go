package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
)

// committer commits the offsets of the worker's queues: one per worker, not
// one per queue (DESIGN.md §10). Queue loops hand it their done offsets
// (offer); every CommitInterval, and at once when the member drains after
// a while of work (drained) or a queue offers its first offset since its
// claim (firstWaits), early flushes an interval apart, it commits every queue that progressed in one
// call (drover.ClaimCommitter: coordinator.Claims.CommitMany sends
// them to ZooKeeper as one multi per request bound), each operation still
// checking its own claim's fencing version. A fenced-out queue is dropped
// alone: its loop is lost, the others commit. After a successful commit
// the queue's outcome records are written, and its log is trimmed with
// them when its trim is due (trimDue).
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

	// early asks the flush goroutine for an early flush: the member has
	// drained (drained). earlyAt is the earliest the next early flush may
	// start (owned by the flush goroutine).
	early   chan struct{}
	earlyAt time.Time
	// first asks the flush goroutine for an early flush: a queue offered
	// its first offset since its claim (firstWaits). Within the same
	// bound as early: early flushes of either kind are an interval apart.
	first chan struct{}
	// firsts counts the first-commit requests the flush goroutine has
	// acted on (tests).
	firsts atomic.Int64
	// busySince is when the member last turned busy (a queue loop started
	// while none ran), in the clock's UnixNano.
	busySince atomic.Int64
	// drains counts the drains the flush goroutine has acted on (tests).
	drains atomic.Int64

	// owed are the queues committed since their log was last trimmed to
	// their committed offset (see trimDue).
	owed map[*queueLoop]owedTrim
	// notes are the queues' notes of the bucket their outcome records went
	// to last, which the trims carry and answer (drover.RecordBucket): one
	// made at a queue's first records, dropped when its loop withdraws (a
	// new claim starts without: another owner may have written since).
	// The map is guarded by mu; a note itself is read and written by the
	// flush goroutine alone. Not a field of queueLoop: 32 bytes more there
	// took every owned queue, idle ones too, into the next size class.
	notes map[*queueLoop]*drover.RecordBucket
}

// A queue's log is trimmed by its owner after its commits, not with each:
// a flush sends a committed queue's outcome records at once (a
// records-only request) but trims its log only when the trim is due. A
// trim costs Redis about five commands whatever it removes (the read of
// the oldest entries, the :delayed check, ZREM, HDEL and, when it empties
// the log, the retire index's ZADD), so what a trim costs a message is
// five over the messages it removes. A queue's trim is due when its first
// untrimmed commit is
//
//   - trimEvery old and trimFew messages or more are owed: a queue that
//     finishes a few messages a second or more, trimmed every few seconds
//     as before (a trim per commit was about 5 of the 8 Redis commands a
//     commit's trim-many carried: docs/decisions.md, "A busy queue's log
//     is trimmed every few seconds, its records with every commit");
//   - trimAtMost old: a key with little work (one message a second, or
//     one in five seconds: the per-key fleet's keys), trimmed when it has
//     trimFew messages to remove or half a minute has passed, not every
//     trimEvery with one or two (docs/decisions.md, "Issue 43: a quiet
//     key's log is trimmed by what it owes");
//
// or when its last commit is trimQuiet old (a key that went quiet: the
// trim that empties its log starts its retire_after, which must not wait
// for trimAtMost while its member stays busy with other keys), or when the
// member is idle (the flush after a run's last commit). The
// log keeps what the committed offset covers that much longer (retention
// is a minimum): per queue at most about trimFew messages or trimEvery's
// worth, whichever is more. Owed messages are counted by the commits'
// outcome records (a queue that keeps none counts one per commit, which
// covers one message or more: its trim may wait up to trimAtMost).
const (
	trimEvery  = 5 * time.Second
	trimFew    = 16
	trimAtMost = 30 * time.Second
	trimQuiet  = 10 * time.Second
)

// trimDue says whether the trim owed o is due at now.
func trimDue(o owedTrim, now time.Time) bool {
	age := now.Sub(o.since)
	return age >= trimAtMost || age >= trimEvery && o.msgs >= trimFew || now.Sub(o.last) >= trimQuiet
}

// seenSweepOdds: about one trim in seenSweepOdds forgets its queue's
// expired dedupe ids (drover.TrimRequest.SweepSeen, up to 1,000), not
// every trim, which swept :seen at a command each even on the queues that
// never had a caller-chosen id (docs/decisions.md, "Issue 43: a message's
// starts beside its envelope, the dedupe sweep one trim in ten"). A queue
// trimmed every trimEvery sweeps about every 50 s, some 1,200 ids a
// minute, as the 100 of a trim every 5 s did; a quiet key, trimmed every
// half minute or so (trimDue), about every five minutes. The enqueues that
// add keyed ids remove up to 100 expired ones each (enqueue v3), so a
// queue that takes keyed ids keeps its set small by itself. Only memory depends
// on it: an enqueue compares an id's window with the time, not with its
// presence.
const seenSweepOdds = 10

// sweepsSeen says whether the trim of queue sent at now forgets expired
// dedupe ids: a hash (FNV-1a, finalised) of the queue's name and of the trimEvery
// slot now falls in, one in seenSweepOdds. No state per queue, the tests'
// clock decides, and no rhythm of commits is locked out: two trims of a
// queue are at least trimEvery apart, so they fall in different slots and
// each sweeps with odds of 1 in seenSweepOdds (a window of a few seconds a
// minute, tried first, never met a queue trimmed every 10 s at :07, :17…).
func sweepsSeen(queue string, now time.Time) bool {
	h := uint32(2166136261)
	for i := 0; i < len(queue); i++ {
		h = (h ^ uint32(queue[i])) * 16777619
	}
	for slot := uint64(now.UnixNano() / int64(trimEvery)); slot > 0; slot >>= 8 {
		h = (h ^ uint32(slot&0xff)) * 16777619
	}
	h ^= h >> 16 // murmur3's finaliser: FNV leaves consecutive slots' hashes close
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h%seenSweepOdds == 0
}

// owedTrim is a queue's trim that waits: up to pos, owed since since.
type owedTrim struct {
	pos   drover.Position
	since time.Time
	// msgs counts the messages committed since the last trim: a commit's
	// outcome records, or one for a commit without records.
	msgs int
	last time.Time // the last commit
	// notBefore: the trim failed (Redis away); it is sent again no
	// sooner (trimRetry), with the queue's next commit or on its own.
	// For a retention follow-up, when its retention has passed.
	notBefore time.Time
	// retained: a retention follow-up (see retentionAfter), which a
	// commit of the queue replaces with an ordinary owed trim.
	retained bool
	// starts is the starter's mark when the offset pos was committed:
	// the trim waits until the start records before it are answered
	// (starter.settledThrough).
	starts uint64
}

// retentionAfter is how long after a trim of a queue with a retention
// window, beyond the window, the committer trims it again to the same
// offset: the entries that trim kept for the window were all enqueued
// before it (they are at or below a committed offset), so by then the
// second trim removes them. A queue that keeps committing is trimmed by its
// commits and the follow-up is replaced; a quiet one kept them until its
// next commit, for good if none came: it never counted as empty and its
// family never retired it (docs/decisions.md, "Issue 43: a quiet
// retention queue is trimmed once its window has passed"). A follow-up
// trim has no follow-up of its own. The margin covers positions a
// producer's clock estimate put ahead of the trim's clock.
const retentionAfter = trimAtMost

// trimRetry is how long a failed trim waits before it is sent again. A
// failed trim used to be dropped: a queue that then stayed idle kept its
// committed messages in its log for good, so it never counted as empty
// and its family never retired it (the chaos run's Redis cuts). It is owed
// again instead, and the committer's goroutine, which runs while a trim
// is owed, retries it a second apart until it succeeds or the queue is
// lost (its new owner trims it). A release whose own trim fails hands it
// over the same way (oweTrim).
const trimRetry = time.Second

// minBusy is the share of a CommitInterval a member must have been busy
// for before its drain flushes early: a member that drains between
// messages every few milliseconds (the busy run: 10,000 queues at 1
// message/s each) keeps the timed flushes, one an interval, and a run that
// ends after working for a while (the runtime benchmarks) commits at once.
const minBusy = 4 // busy for at least CommitInterval/minBusy

// busy records that the member turned busy now.
func (c *committer) busy() { c.busySince.Store(c.w.cfg.Clock.Now().UnixNano()) }

// commitReq is one queue's offset to commit, with the outcome records of the
// messages it covers.
type commitReq struct {
	off      drover.Offset
	outcomes []drover.Outcome
	// recordsOnly: nothing to commit, only records to write (offerRecords):
	// the offset has not moved since the last offer.
	recordsOnly bool
}

func newCommitter(w *Worker) *committer {
	c := &committer{w: w, pending: map[*queueLoop]*commitReq{}, inflight: map[*queueLoop]bool{},
		early: make(chan struct{}, 1), first: make(chan struct{}, 1), owed: map[*queueLoop]owedTrim{},
		notes: map[*queueLoop]*drover.RecordBucket{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// offer queues l's offset (a later offer of the same queue replaces the
// offset and adds its records) for the next flush. It copies outcomes: the
// queue loop reuses its buffer, so that a busy queue does not grow a new
// one from nothing after every offer. It never blocks on I/O.
func (c *committer) offer(l *queueLoop, off drover.Offset, outcomes []drover.Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[l] == nil {
		c.pending[l] = &commitReq{off: off, outcomes: append([]drover.Outcome(nil), outcomes...)}
	} else {
		c.mergeLocked(l, &commitReq{off: off, outcomes: outcomes}) // appends a copy
	}
	if !c.running {
		c.running = true
		go c.run()
	}
}

// offerRecords queues the records of messages that finished while the
// queue's offset could not move (an older message still runs) for the
// next flush, which writes them without a commit: a finished job reads
// finished at once, not when the older message ends (issue 41: a job read
// "pending" for three minutes behind a long retry). A later offer of an
// offset takes them along as usual. It copies outcomes and never blocks on
// I/O.
func (c *committer) offerRecords(l *queueLoop, outcomes []drover.Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[l] == nil {
		c.pending[l] = &commitReq{recordsOnly: true}
	}
	p := c.pending[l]
	p.outcomes = append(p.outcomes, outcomes...)
	if max := l.config().Outcomes.MaxRecords(); len(p.outcomes) > max {
		p.outcomes = p.outcomes[len(p.outcomes)-max:]
	}
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
	if !r.recordsOnly && (p.recordsOnly || r.off.Position > p.off.Position) {
		p.off, p.recordsOnly = r.off, false
	}
	p.outcomes = append(p.outcomes, r.outcomes...)
	if max := l.config().Outcomes.MaxRecords(); len(p.outcomes) > max {
		p.outcomes = p.outcomes[len(p.outcomes)-max:]
	}
}

// withdraw takes back what waits for l, after waiting for a flush that is
// committing l: the queue is shutting down and its release carries the
// final offset. It returns the records that were not trimmed yet, whether
// anything was waiting, and whether l's log still waits for a trim to its
// committed offset (the release trims it).
func (c *committer) withdraw(l *queueLoop) (outcomes []drover.Outcome, waiting, trimOwed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.inflight[l] {
		c.cond.Wait()
	}
	_, trimOwed = c.owed[l]
	delete(c.owed, l)
	delete(c.notes, l)
	r, ok := c.pending[l]
	if !ok {
		return nil, false, trimOwed
	}
	delete(c.pending, l)
	return r.outcomes, true, trimOwed
}

// drained tells the committer that the member has drained: no queue loop
// runs, so nothing is in flight and nothing waits to run. What waits then
// is the member's last progress for now, and waiting for the interval
// only delays its commit (the commit tail: up to a CommitInterval after
// the last task). The flush goroutine flushes at once when the member had
// been busy for at least CommitInterval/minBusy, unless an early flush
// started less than a CommitInterval ago: then (and after a shorter
// burst) the timed flush commits it. It never blocks.
func (c *committer) drained() {
	c.mu.Lock()
	waiting := c.running && len(c.pending) > 0
	c.mu.Unlock()
	if waiting {
		wakeUp(c.early)
	}
}

// firstWaits tells the committer that a queue has offered its first offset
// since its claim (after offer). Until that offset is committed, every start
// of the queue waits for its record's round trip (runMessage: what makes a
// poison head that kills its worker counted); at the timed flush that was
// the first CommitInterval after every claim, a quarter of a 2,000-task
// /bin/true run (docs/decisions.md, "Issue 43: where the /bin/true ratio
// goes"). The flush goroutine flushes at once unless an early flush
// started less than an interval ago: the queue's starts then wait for its
// first task and a commit. It never blocks.
func (c *committer) firstWaits() { wakeUp(c.first) }

// run flushes every CommitInterval until nothing waits, early when the
// member drains, and early when a queue waits for its first commit since
// its claim. The interval runs from one flush's start to the next:
// timed from a flush's end, every flush's own duration added to the wait
// of the offsets behind it (the commit tail a drained queue waits for: up
// to an interval plus a flush).
//
// Early flushes (of a drain or of a first commit) are at least a
// CommitInterval apart (start to start), and a flush restarts the
// interval: flushes start at most twice per interval whatever the load (an
// early one and a timed one), 10 a second at the
// default 200 ms, each one multi per 448 KB of offsets (about 2,000
// queues). A member of the busy run drains between messages all the time,
// after bursts of a few milliseconds: it flushes early seldom, if ever,
// and keeps one flush an interval (docs/decisions.md, "Commit tail and
// batched commits").
func (c *committer) run() {
	clk := c.w.cfg.Clock
	interval := c.w.cfg.CommitInterval
	t := clk.NewTimer(interval)
	defer t.Stop()
	for {
		early := false
		select {
		case <-t.C():
		case <-c.early:
			c.drains.Add(1)
			if c.w.loopGoroutines.Load() != 0 {
				continue // busy again: the drain is not the end of its work
			}
			now := clk.Now()
			if now.Sub(time.Unix(0, c.busySince.Load())) < interval/minBusy {
				continue // a short burst: the timed flush is soon enough
			}
			if now.Before(c.earlyAt) {
				// The last flush was early and started less than an
				// interval ago: the timer, set for that interval's end,
				// flushes these offsets then.
				continue
			}
			early = true
		case <-c.first:
			c.firsts.Add(1)
			if clk.Now().Before(c.earlyAt) {
				continue // the timer, at that interval's end, flushes it
			}
			early = true
		}
		now := clk.Now()
		next := now.Add(interval)
		if early {
			c.earlyAt = next
		}
		c.mu.Lock()
		if c.w.suspended.Load() || len(c.pending) == 0 {
			// While the session is suspended nothing is committed: the
			// offsets wait (a lost session ends the queues, which withdraw).
			if len(c.pending) == 0 && len(c.owed) == 0 {
				c.running = false
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			if !c.w.suspended.Load() {
				c.trimOwed(nil, nil, nil, c.w.starts.mark()) // nothing to commit: the trims that wait
			}
			t.Reset(interval)
			continue
		}
		// Every start of the messages these offsets cover was handed to
		// the starter before now: their trims wait for those records.
		mark := c.w.starts.mark()
		batch := c.pending
		c.pending = map[*queueLoop]*commitReq{}
		for l := range batch {
			c.inflight[l] = true
		}
		c.mu.Unlock()

		c.flush(batch, mark)

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

// maxFallbackCommits bounds the one-by-one commits of a flush in flight.
const maxFallbackCommits = 16

// flush commits every queue of batch at once: the queues whose claims
// commit in batches (drover.BatchClaim: the coordinator's) with one
// CommitMany call per committer, which sends them as one fenced multi per
// request bound; any others concurrently (at most maxFallbackCommits at a time), one Commit each. A failed commit
// that did not lose the queue is offered again for the next flush.
// Then the committed queues' records are written and their due trims
// sent (trimOwed): one TrimMany call of the committer's
// goroutine, a round trip per 64 queues on one connection, so that a
// flush of 500 queues does not take every connection of the Redis client
// (the queues' reads waited behind the trims: 213 of 233 goroutines at the
// client's pool were trims with 10,000 busy queues).
func (c *committer) flush(batch map[*queueLoop]*commitReq, mark uint64) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		done   []*queueLoop
		groups = map[drover.ClaimCommitter][]*queueLoop{}
		// Claims that commit one by one, each in a goroutine, bounded:
		// never a goroutine per queue (DESIGN.md §10).
		fallback = make(chan struct{}, maxFallbackCommits)
	)
	var records []*queueLoop // records-only requests: nothing to commit
	for l, r := range batch {
		if l.lost.Load() {
			continue // another member owns it: write nothing
		}
		if r.recordsOnly {
			records = append(records, l)
			continue
		}
		if bc, ok := l.claim.(drover.BatchClaim); ok {
			if k := bc.Committer(); k != nil { // nil: a wrapper whose claim cannot
				groups[k] = append(groups[k], l)
				continue
			}
		}
		wg.Add(1)
		fallback <- struct{}{} // at most maxFallbackCommits at once
		go func() {
			defer func() { <-fallback; wg.Done() }()
			if c.commit(l, r) {
				mu.Lock()
				done = append(done, l)
				mu.Unlock()
			}
		}()
	}
	for cm, ls := range groups {
		committed := c.commitMany(cm, ls, batch)
		mu.Lock()
		done = append(done, committed...)
		mu.Unlock()
	}
	wg.Wait()
	c.trimOwed(done, records, batch, mark)
}

// trimOwed sends, in TrimMany calls, the outcome records of the queues
// done just committed (their requests in batch) and the trims that are
// due: every owed trim when the member is idle (a flush with nothing to
// commit while no queue loop runs: an interval after a run's last
// commit), else those due (trimDue). A queue just committed whose
// trim is not due yet gets a records-only request, when it has records.
// A trim deletes the starts fields of the messages it covers, so it is
// not sent before the start records handed in before mark (taken when the
// offsets it trims to had all been offered) are answered: until then it
// stays owed, and the committer does not wait for them. It waited here
// before, up to writeTimeout, and every commit of the member waited behind
// it: a task that ended just after Redis came back was committed seconds
// late, and a freeze in between ran it again (the "commit waits behind a
// start record" item of docs/reliability.md).
//
// records are the queues of batch that only have records to write (their
// offset did not move): each gets a records-only request.
func (c *committer) trimOwed(done, records []*queueLoop, batch map[*queueLoop]*commitReq, mark uint64) {
	now := c.w.cfg.Clock.Now()
	// The member is idle: nothing to commit and no queue running. (A
	// member of the busy run has no queue running at about half its
	// flushes, between messages: that alone is no sign that the run ended.)
	all := len(done) == 0 && c.w.loopGoroutines.Load() == 0
	// How far the start records are answered (starter.settledThrough),
	// asked when a trim is due, not at every flush: asking ends the hold
	// of the records before mark, which only a trim needs.
	var answered uint64
	asked := false
	startsAnswered := func(m uint64) bool {
		if !asked {
			answered, asked = c.w.starts.settledThrough(mark), true
		}
		return m <= answered
	}
	var reqs []drover.TrimRequest
	var whose []*queueLoop
	var followUps map[int]bool // indices into reqs of retention follow-ups (nil: none)
	add := func(l *queueLoop, r drover.TrimRequest) {
		cfg := l.config()
		r.Queue, r.Retention, r.Policy = l.name, cfg.Retention.Std(), cfg.Outcomes
		r.SweepSeen = !r.RecordsOnly && sweepsSeen(l.name, now)
		if len(r.Outcomes) > 0 { // the note goes with them, TrimMany writes it back
			if r.Bucket = c.notes[l]; r.Bucket == nil {
				r.Bucket = new(drover.RecordBucket)
				c.notes[l] = r.Bucket
			}
		}
		reqs, whose = append(reqs, r), append(whose, l)
	}
	c.mu.Lock()
	for _, l := range done {
		r := batch[l]
		o, ok := c.owed[l]
		if !ok || o.retained {
			o = owedTrim{since: now}
		}
		o.msgs += max(1, len(r.outcomes))
		o.last = now
		if (all || trimDue(o, now)) && !now.Before(o.notBefore) && startsAnswered(mark) {
			delete(c.owed, l)
			add(l, drover.TrimRequest{Offset: r.off.Position, Outcomes: r.outcomes})
			continue
		}
		o.pos, o.starts = r.off.Position, mark
		c.owed[l] = o
		if len(r.outcomes) > 0 {
			add(l, drover.TrimRequest{Offset: r.off.Position, Outcomes: r.outcomes, RecordsOnly: true})
		}
	}
	for _, l := range records {
		add(l, drover.TrimRequest{Offset: drover.Position(l.committed.Load()), Outcomes: batch[l].outcomes, RecordsOnly: true})
	}
	for l, o := range c.owed { // the queues not trimmed when they committed
		switch {
		case l.lost.Load():
			delete(c.owed, l) // its new owner trims it
		case now.Before(o.notBefore):
			// failed lately: sent again at notBefore
		case all || trimDue(o, now):
			if !startsAnswered(o.starts) {
				break // a start record it covers is not answered yet: a later flush
			}
			delete(c.owed, l)
			if o.retained {
				if followUps == nil {
					followUps = map[int]bool{}
				}
				followUps[len(reqs)] = true
			}
			add(l, drover.TrimRequest{Offset: o.pos})
		}
	}
	c.mu.Unlock()
	if len(reqs) == 0 {
		return
	}
	bt := c.w.cfg.Store
	var failed []int // indices into reqs of the trims to send again
	// Each part has its own deadline: a flush of thousands of queues is
	// several round trips, and one deadline for all failed the last ones.
	for start := 0; start < len(reqs); start += trimPart {
		part := reqs[start:min(start+trimPart, len(reqs))]
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		for i, err := range bt.TrimMany(ctx, part) {
			if err != nil {
				whose[start+i].logger().Warn("trim queue", "offset", part[i].Offset, "records only", part[i].RecordsOnly, "error", err)
				if !part[i].RecordsOnly {
					failed = append(failed, start+i)
				}
			}
		}
		cancel()
	}
	c.oweAgain(reqs, whose, failed)
	c.oweRetained(reqs, whose, failed, followUps)
}

// oweRetained owes the retention follow-up (retentionAfter) of each queue
// trimmed in reqs with a retention window, unless its trim failed (owed
// again already), it was a follow-up itself, the queue owes a trim already
// or was lost (its new owner's claim finds the entries: oweClaimed).
func (c *committer) oweRetained(reqs []drover.TrimRequest, whose []*queueLoop, failed []int, followUps map[int]bool) {
	now := c.w.cfg.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, r := range reqs {
		if r.RecordsOnly || r.Retention <= 0 || followUps[i] || slices.Contains(failed, i) {
			continue
		}
		l := whose[i]
		if _, ok := c.owed[l]; ok || l.lost.Load() {
			continue
		}
		c.owed[l] = owedTrim{pos: r.Offset, since: now, last: now, notBefore: now.Add(r.Retention + retentionAfter), retained: true}
	}
}

// oweAgain owes again the trims at failed (their outcome records are not
// sent again: records are kept at best, a trim must happen), no sooner
// than trimRetry from now (see trimRetry).
func (c *committer) oweAgain(reqs []drover.TrimRequest, whose []*queueLoop, failed []int) {
	if len(failed) == 0 {
		return
	}
	now := c.w.cfg.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range failed {
		if l := whose[i]; !l.lost.Load() { // else its new owner trims it
			c.oweLocked(l, reqs[i].Offset, now)
		}
	}
}

// oweTrim owes the trim of l, whose release could not trim its log, to
// pos, the offset it released (see trimRetry): the loop is gone, and a trim
// at an offset committed is right whoever owns the queue next. It starts
// the flush goroutine when none runs. It never blocks on I/O.
func (c *committer) oweTrim(l *queueLoop, pos drover.Position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.oweLocked(l, pos, c.w.cfg.Clock.Now())
	if !c.running {
		c.running = true
		go c.run()
	}
}

// oweClaimed owes the trim of l, just claimed, to its committed offset,
// as if it had committed now: its log still holds messages at or before
// that offset (CheckQueues' Stale), which its last owner committed and was
// lost before trimming (an owed trim of a lost queue is dropped: "its new
// owner trims it"). A queue that runs on commits and trims as usual; one
// that stays quiet is trimmed trimQuiet after its claim, or at once when
// the member is idle, so that it empties and its family can retire it. A
// trim already owed is left as it is. It never blocks on I/O.
func (c *committer) oweClaimed(l *queueLoop) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.owed[l]; ok || l.lost.Load() {
		return
	}
	now := c.w.cfg.Clock.Now()
	c.owed[l] = owedTrim{pos: drover.Position(l.committed.Load()), since: now, last: now}
	if !c.running {
		c.running = true
		go c.run()
	}
}

// oweLocked owes l's trim to pos, no sooner than trimRetry after now; c.mu
// is held.
func (c *committer) oweLocked(l *queueLoop, pos drover.Position, now time.Time) {
	o, ok := c.owed[l]
	if !ok {
		o.since, o.last = now, now
	}
	o.pos = max(o.pos, pos)
	o.notBefore = now.Add(trimRetry)
	c.owed[l] = o
}

// trimPart is the most queues trimmed under one deadline.
const trimPart = 256

// commitMany commits the offsets of ls, whose claims share committer cm,
// in one call; it returns the queues committed (the caller trims them).
func (c *committer) commitMany(cm drover.ClaimCommitter, ls []*queueLoop, batch map[*queueLoop]*commitReq) []*queueLoop {
	reqs := make([]drover.CommitRequest, len(ls))
	for i, l := range ls {
		reqs[i] = drover.CommitRequest{Claim: l.claim, Offset: batch[l].off}
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	start := time.Now()
	errs := cm.CommitMany(ctx, reqs)
	c.w.cfg.Metrics.AddSample(metrics.CommitDuration, ms(time.Since(start)))
	if len(errs) != len(reqs) {
		err := fmt.Errorf("commit of %d queues: %d results", len(reqs), len(errs))
		errs = make([]error, len(reqs))
		for i := range errs {
			errs[i] = err // not lost: offered again
		}
	}
	var done []*queueLoop
	for i, l := range ls {
		if c.settle(l, batch[l], errs[i]) {
			done = append(done, l)
		}
	}
	return done
}

// commit commits one queue's offset through its claim alone; it reports
// whether the offset is committed (the caller trims what it covers).
func (c *committer) commit(l *queueLoop, r *commitReq) bool {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	start := time.Now()
	err := l.claim.Commit(ctx, r.off)
	c.w.cfg.Metrics.AddSample(metrics.CommitDuration, ms(time.Since(start)))
	return c.settle(l, r, err)
}

// settle takes the result of l's commit of r: a refused commit loses the
// queue, another failure offers r again for the next flush, a success is
// recorded. It reports whether the offset is committed.
func (c *committer) settle(l *queueLoop, r *commitReq, err error) bool {
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
	l.flags.Or(loopCommitted)
	l.mu.Lock()
	l.snap.Committed = r.off.Position
	l.mu.Unlock()
	return true
}
