package worker

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
)

// writeTimeout bounds one commit, release, trim, retry or dead-letter write.
const writeTimeout = 10 * time.Second

// queueLoop runs one owned queue. While it has work, its run goroutine
// owns the fetch, dispatch and progress state (prog, running, fetched…);
// task goroutines report back through results. Without work it is parked
// (park.go): no goroutine, the state kept here for the next run goroutine.
type queueLoop struct {
	w     *Worker
	name  string
	claim Claim
	cfg   atomic.Pointer[drover.QueueConfig]

	waiter  atomic.Pointer[poolWaiter] // the loop's place at the worker's pool; made by slotWaiter
	wake    chan struct{}              // nudges a running loop: enqueues, pause changes, pool grants
	tasks   chan *slot                 // to the runner goroutines; nil while none runs
	results chan taskDone              // from the runner goroutines; nil while parked
	runners int                        // runner goroutines started (owned by run)

	// The contexts of the current turn of the run goroutine (turn.go):
	// created when it starts, dropped when it parks, so that a parked
	// queue holds none. Set by the run goroutine under turnMu.
	stopCtx     context.Context // cancelled: stop fetching and dispatching
	taskCtx     context.Context // cancelled: kill in-flight tasks
	turnMu      sync.Mutex      // guards the fields below and the writes of the two above
	cancelStop  context.CancelFunc
	cancelTasks context.CancelFunc
	stopped     bool // stop was called: every turn's stopCtx starts cancelled
	aborted     bool // abortTasks was called: every turn's taskCtx starts cancelled
	handing     bool // a planned stop: the running tasks finish under their own timeouts (shutdown)

	lost       atomic.Bool
	releaseErr error // set before the loop ends (ended)

	// Parking (park.go) and the idle scheduler (idle.go).
	phase         atomic.Int32  // phaseParked, phaseRunning, phaseEnded
	token         atomic.Bool   // signalled since the run goroutine last looked
	pendingWork   atomic.Bool   // parked with work left (paused, or woken while paused)
	dueNow        atomic.Bool   // a delayed message came due: promote now
	needVerify    atomic.Bool   // the queue was paused: verify the claim before fetching
	rateHeld      atomic.Bool   // work waits for a token of the queue's rate limit (State)
	parkedFetched atomic.Int64  // the fetched position when parked, for the backstop check
	checked       atomic.Bool   // checked or run once since the start
	dueKnown      atomic.Bool   // a check learnt its next due time: the first run need not promote
	seenHead      atomic.Int64  // the head the backstop last woke the queue for
	parkedGen     atomic.Uint64 // the block generation the loop parked under
	committed     atomic.Int64  // the last committed position (set by the committer)

	// Owned by the run goroutine (kept while parked).
	prog        progress
	fetched     drover.Position
	running     int
	offered     drover.Position // the last position handed to the committer
	lastPromote loopTime
	lastRead    loopTime
	lastBacklog loopTime
	blockGen    uint64 // the worker's block generation last seen
	iterations  uint8  // iterations of the current turn, counted up to 2: only "more than one" matters
	caughtUp    bool   // the last read returned fewer than asked
	wasBlocked  bool   // paused or suspended at the last iteration
	ended       bool   // the loop has shut down; guarded by mu (kept here: the record's size)
	// flags: loopCommitted, loopStartsRead, loopCountsZero,
	// loopCountsMoved in the low byte, the gauges' local re-sets above
	// loopResetsShift (backlog.go). Kept here, in the padding before
	// extras: the record's size.
	flags    atomic.Uint32
	extras   *loopExtras      // rate limit and park hold; nil while the queue uses neither
	outcomes []drover.Outcome // records of finished messages, for the next commit's trim

	mu       sync.Mutex // guards the fields below, read by State
	inflight map[string]*TaskState
	snap     loopSnap
	done     chan struct{} // made by doneCh, closed when the loop has shut down
}

// Bits of queueLoop.flags.
const (
	// loopCommitted: a commit of this owner succeeded since its claim (set
	// by the committer). Until then, or loopQuiet, every start waits for
	// its record (runMessage).
	loopCommitted = 1 << iota
	// loopStartsRead: a read that asked for the recorded starts caught up
	// with the queue since the claim (set by the run goroutine), or a
	// check found nothing after the fetched offset (set by the idle
	// scheduler: checkLoops). Every message a previous owner could have
	// started was read with its starts by then (its position is at or
	// below the head when this owner claimed the queue), so later reads do
	// not ask: what was written after that was started by this owner
	// alone, or is a retry whose envelope says so (its start then waits
	// for the exact count).
	loopStartsRead
	// loopQuiet: a check since the claim found nothing after the fetched
	// offset, and all that was fetched was committed (set by the idle
	// scheduler with loopStartsRead): nothing in the log was unfinished.
	// A first start then goes without waiting for its record, as after a
	// commit. A message that kills its worker before its record leaves
	// stays unfinished in the log after the offset, so no later owner's
	// check finds the queue quiet while it is there: their starts wait,
	// and count it (docs/decisions.md, "Issue 43: a key claimed quiet
	// takes its first message from its wake-up").
	loopQuiet
	// loopCountsZero and loopCountsMoved, and the count of the gauges'
	// local re-sets above loopResetsShift: what a caught-up queue knows of
	// its delayed and dead counts without a read (backlog.go).
	loopCountsZero
	loopCountsMoved
	loopFlagsEnd // the flags end below loopResetsShift's bits
)

var _ [1<<loopResetsShift - loopFlagsEnd]struct{} // a ninth flag fails to compile

// taskDone is a task goroutine's report: whether the message is finished
// (succeeded, retried later or dead-lettered) or must run again elsewhere.
type taskDone struct {
	s    *slot
	done bool
}

// newQueueLoop returns a parked loop: the idle scheduler checks it, and a
// signal starts it.
func newQueueLoop(w *Worker, qc drover.QueueConfig, claim Claim) *queueLoop {
	l := &queueLoop{
		w: w, name: qc.Name, claim: claim,
		wake: make(chan struct{}, 1),
	}
	l.setConfig(qc)
	off := claim.Offset().Position
	l.fetched, l.offered, l.prog.offset = off, off, off
	l.committed.Store(int64(off))
	l.parkedFetched.Store(int64(off))
	// Started paused: verify when it runs unpaused (SetPause marks only
	// the queues it finds running).
	l.needVerify.Store(w.blocked(qc.Name))
	l.blockGen = w.blockGen.Load()
	l.parkedGen.Store(l.blockGen)
	// The first backlog read waits a BacklogInterval, like every later
	// one: 10,000 queues turning busy at once read theirs one round trip
	// each before their first task otherwise (a parked, caught-up queue
	// sets its lag to 0 without a read meanwhile).
	l.lastBacklog = w.loopTime(w.cfg.Clock.Now())
	l.snap = loopSnap{Committed: off, Done: off, Fetched: off}
	return l
}

// setConfig replaces the loop's configuration with the worker's shared copy
// of qc (defaults applied, Name cleared: the loop's name is l.name).
func (l *queueLoop) setConfig(qc drover.QueueConfig) {
	old := l.cfg.Swap(l.w.configs.intern(qc))
	if old != nil && old.RateLimit != qc.RateLimit && l.rateHeld.Load() {
		// Held for a token of the old limit: the new one applies now,
		// not when the old rate's token would have come.
		l.signal()
	}
}

// slotWaiter returns the loop's place at the worker's pool, made when the
// queue first asks for a slot: a queue that never runs a task holds none.
// Only the run goroutine calls it.
func (l *queueLoop) slotWaiter() *poolWaiter {
	if w := l.waiter.Load(); w != nil {
		return w
	}
	w := &poolWaiter{queue: l.name, weight: l.config().Weight, wake: l.signal}
	l.waiter.Store(w)
	return w
}

// config is the queue's configuration: shared with the other queues
// configured alike, so read-only, and its Name is empty (use l.name).
func (l *queueLoop) config() *drover.QueueConfig { return l.cfg.Load() }

// markLost stops the queue without any further write. A parked loop is
// started to shut down.
func (l *queueLoop) markLost() {
	l.markLostQuiet()
	l.signal()
}

// markLostQuiet is markLost without the signal: the caller starts the
// loop's shutdown (Worker.abort, a batch at a time).
func (l *queueLoop) markLostQuiet() {
	l.lost.Store(true)
	l.abortTasks()
	l.stop()
}

// end stops the queue gracefully (let the running tasks end, release); a
// parked loop is started to shut down. A planned end lets the running tasks
// finish under their own timeouts (shutdown); a leaving one is bounded by
// its caller's drain timeout, and cuts a planned hand-over in progress.
func (l *queueLoop) end(kind drover.StopKind) {
	l.endQuiet(kind)
	l.signal()
}

// endQuiet is end without the signal: the caller starts the loop's
// shutdown (Worker.StopQueues, a batch at a time).
func (l *queueLoop) endQuiet(kind drover.StopKind) {
	l.turnMu.Lock()
	cut := l.handing && kind != drover.StopPlanned
	if kind == drover.StopPlanned {
		l.handing = !l.stopped || l.handing // a stop that leaves stays one
	} else {
		l.handing = false
	}
	l.turnMu.Unlock()
	if cut {
		l.logger().Info("handing over cut short: the member is leaving; running tasks get the drain timeout",
			"drain_timeout", l.w.cfg.DrainTimeout)
	}
	l.stop()
}

// handingOver reports whether the loop stops for a planned move.
func (l *queueLoop) handingOver() bool {
	l.turnMu.Lock()
	defer l.turnMu.Unlock()
	return l.handing
}

// run is one turn of the loop's goroutine: it runs iterations until the
// queue's work is done (it parks) or the queue stops (it shuts down).
func (l *queueLoop) run() {
	defer l.w.loopStopped()
	l.checked.Store(true)
	l.beginTurn()
	var timer drover.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for l.stopCtx.Err() == nil {
		woken := l.token.Swap(false)
		now := l.w.cfg.Clock.Now()
		l.iterations = min(l.iterations+1, 2)
		l.w.iterationCount.Add(1)
		if !l.iterate(now, woken) {
			break
		}
		if l.idle() {
			l.publishIdle(now)
			l.endTurn()
			if l.park() {
				return
			}
			l.beginTurn()
			continue
		}
		d := l.nextTimer(l.w.cfg.Clock.Now())
		if timer == nil {
			timer = l.w.cfg.Clock.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case r := <-l.results:
			l.finish(r)
			l.finishReady()
		case <-l.wake:
		case <-timer.C():
		case <-l.stopCtx.Done():
		}
	}
	l.shutdown()
	l.phase.Store(phaseEnded)
	l.w.pushes.forget(l) // after the phase: WakeWith forgets what it adds later
	l.closeDone()
}

// iterate does what the loop can do now; it reports false when the queue
// was found lost.
func (l *queueLoop) iterate(now time.Time, woken bool) bool {
	if woken {
		l.caughtUp = false // an enqueue, a due message, a check: read again
	}
	gen := l.w.blockGen.Load()
	blocked := l.blockedNow()
	// The claim is verified when the queue may have been paused since the
	// loop last looked (an operator may reset the offset while it is): the
	// loop saw the pause, or slept through one while parked.
	verify := l.wasBlocked || gen != l.blockGen || l.needVerify.Load()
	if !blocked && verify {
		l.needVerify.Store(false)
		if !l.verifyClaim() {
			return false
		}
	}
	l.blockGen = gen
	if blocked && !l.wasBlocked {
		l.releasePools() // a paused queue keeps no warm children
	}
	l.wasBlocked = blocked
	// A loop promotes when the idle scheduler says a delayed message is
	// due, the first time it runs (to learn its next due time), and every
	// PromoteInterval of a turn while tasks are in flight — not each time
	// it wakes from parking (its due times are known), nor in a turn that
	// only waits (for a read, say): such a turn knows what a parked queue
	// knows. Counted over every turn, an overloaded fleet's slow reads
	// made nearly every turn promote, a round trip each, which kept it
	// overloaded (docs/decisions.md, "Issue 43: a turn that waits does not
	// promote").
	due := l.dueNow.Swap(false)
	if l.lastPromote.IsZero() && l.dueKnown.Load() {
		// The check at the start learnt the queue's next due time (the
		// idle scheduler holds it): a promotion now would find nothing
		// due. With 10,000 queues turning busy at once, it was a round
		// trip per queue before its first task.
		l.lastPromote = l.w.loopTime(now)
	}
	if due || l.lastPromote.IsZero() || (l.running > 0 && l.iterations > 1 && now.Sub(l.w.timeOf(l.lastPromote)) >= l.w.cfg.PromoteInterval) {
		l.promote(now)
	}
	// What was read before goes first: a loop woken by a slot of the
	// worker's pool starts its task before any round trip, so that the
	// slot never sits granted and unused while the loop reads (with
	// thousands of busy queues sharing the pool, that wait set the
	// worker's throughput: capacity / read latency).
	l.dispatch()
	if l.shouldFetch(now) {
		l.fetch(now)
		l.dispatch()
	}
	l.offerCommit(now)
	l.publish()
	if l.running > 0 && now.Sub(l.w.timeOf(l.lastBacklog)) >= l.backlogEvery() {
		l.publishBacklog(now)
	}
	return true
}

// idle reports whether the loop's work is done for now: nothing runs, and
// it is caught up with nothing buffered — or it cannot go on anyway
// (paused, or waiting for a slot of the worker's pool, which signals it).
func (l *queueLoop) idle() bool {
	if l.running > 0 || l.stopCtx.Err() != nil || l.token.Load() {
		return false
	}
	if l.blockedNow() || l.w.pool.isWaiting(l.waiter.Load()) {
		return true
	}
	if due, held := l.tokenDue(); held {
		// Waiting for a token of its rate limit: the idle scheduler
		// signals the queue when it is due.
		l.w.idle.tokenAt(l.name, due)
		return true
	}
	return l.caughtUp && l.prog.undispatched() == 0
}

// nextTimer returns how long a running loop may sleep before it has timed
// work: its own promotion and backlog while tasks run, a re-read while it
// waits on a full read-ahead. With nothing in flight it has neither (they
// would be due at once, so for a turn that waited over a PromoteInterval
// the loop would turn every millisecond): it looks again a PromoteInterval
// later, the longest it slept before.
func (l *queueLoop) nextTimer(now time.Time) time.Duration {
	c := l.w.cfg
	d := c.PromoteInterval
	if l.running > 0 {
		d = l.w.timeOf(l.lastPromote).Add(c.PromoteInterval).Sub(now)
		if r := l.w.timeOf(l.lastBacklog).Add(l.backlogEvery()).Sub(now); r < d {
			d = r
		}
	}
	if l.caughtUp {
		if r := l.w.timeOf(l.lastRead).Add(c.PollInterval).Sub(now); r < d {
			d = r
		}
	}
	if due, held := l.tokenDue(); held {
		if r := due.Sub(now); r < d {
			d = r
		}
	}
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}

func (l *queueLoop) promote(now time.Time) {
	l.lastPromote = l.w.loopTime(now)
	ctx, cancel := context.WithTimeout(l.stopCtx, writeTimeout)
	defer cancel()
	n, next, err := l.w.promotes.promote(ctx, l.name, now, 1000)
	if err != nil {
		if l.stopCtx.Err() == nil {
			l.logger().Warn("promote due messages", "error", err)
		}
		return
	}
	if n > 0 {
		l.caughtUp = false
		l.countsMoved() // fewer delayed
	}
	if !next.IsZero() {
		l.w.idle.at(l.name, next) // promote again when the next one is due
	}
}

// shouldFetch: keep one batch of read-ahead beyond what is dispatched, and
// do not read a caught-up queue again before a wake-up or the poll interval.
func (l *queueLoop) shouldFetch(now time.Time) bool {
	if l.blockedNow() || l.prog.undispatched() >= l.w.cfg.BatchSize {
		return false
	}
	if l.prog.undispatched() > 0 && (l.w.pool.isWaiting(l.waiter.Load()) || l.rateHeld.Load()) {
		// Waiting for a slot or a token with work in hand: another read
		// (each wake-up of an enqueue would cost one) adds nothing to run.
		return false
	}
	return !l.caughtUp || now.Sub(l.w.timeOf(l.lastRead)) >= l.w.cfg.PollInterval
}

func (l *queueLoop) fetch(now time.Time) {
	l.lastRead = l.w.loopTime(now)
	if l.takePushed() {
		return // the wake-ups carried what follows the last read
	}
	// The read's deadline is made only for a read: most of a sparse key's
	// messages come in their wake-ups, and a context with a deadline (its
	// timer, its registration with stopCtx) was 4% of a worker's CPU there.
	n := l.w.cfg.BatchSize
	ctx, cancel := context.WithTimeout(l.stopCtx, writeTimeout)
	defer cancel()
	starts := l.flags.Load()&loopStartsRead == 0
	ds, err := l.w.reads.read(ctx, l.name, l.fetched, n, starts) // the reader samples its round trips
	if err != nil {
		if l.stopCtx.Err() == nil {
			l.logger().Warn("read queue", "after", l.fetched, "error", err)
		}
		l.caughtUp = true // back off until the poll interval
		return
	}
	if l.stopCtx.Err() != nil {
		return // stopped or lost meanwhile: what was read is not run here
	}
	l.caughtUp = len(ds) < n
	if starts && l.caughtUp {
		l.flags.Or(loopStartsRead)
	}
	if len(ds) == 0 {
		return
	}
	l.prog.add(ds, starts)
	l.fetched = ds[len(ds)-1].Position
	l.w.pushes.prune(l, l.fetched)
}

// dispatch starts as many fetched tasks as the queue's concurrency, its
// rate limit and the worker's pool allow.
func (l *queueLoop) dispatch() {
	l.rateHeld.Store(false)
	if l.blockedNow() {
		l.w.pool.leave(l.waiter.Load()) // hand back slots granted while paused
		return
	}
	cfg := l.config()
	var now time.Time
	if cfg.RateLimit.Enabled() || l.extras != nil {
		now = l.w.cfg.Clock.Now() // a clock read only for a limited queue
	}
	lim := l.limiter(cfg, now)
	for l.prog.undispatched() > 0 && l.running < cfg.Concurrency {
		var token *rate.Reservation
		if lim != nil {
			if token = l.takeToken(lim, now); token == nil {
				return // the idle scheduler or the loop's timer wakes it when due
			}
		}
		if !l.w.pool.tryAcquire(l.slotWaiter()) {
			if token != nil {
				token.CancelAt(now) // the token stays for the slot's grant
			}
			return // a release signals l.wake
		}
		s := l.prog.takeNext()
		l.running++
		if l.tasks == nil {
			l.tasks = make(chan *slot)
		}
		if l.running > l.runners {
			// Runners are long-lived: a task costs no goroutine start and
			// no stack growth. There is one per task in flight at most.
			l.runners++
			go l.runner(l.tasks)
		}
		l.tasks <- s
	}
}

// finishReady takes every report that is ready without blocking, so that a
// burst of completions costs one loop iteration.
func (l *queueLoop) finishReady() {
	for {
		select {
		case r := <-l.results:
			l.finish(r)
		default:
			return
		}
	}
}

// finish takes a task goroutine's report.
func (l *queueLoop) finish(r taskDone) {
	l.running-- // the runner gave the pool slot back
	if r.s.parkedUnder != nil {
		l.rewindToParkedHead(r.s)
		return
	}
	if r.done {
		l.keepOutcome(r.s)
		l.prog.complete(r.s)
	}
}

// offerCommit hands the offset to the worker's committer when it moved;
// the committer commits the offsets of all the queues that progressed in
// one coalesced write per CommitInterval (commit.go). The outcome records
// go along, for the trim that follows the commit.
func (l *queueLoop) offerCommit(now time.Time) {
	if l.lost.Load() {
		return
	}
	if l.prog.offset == l.offered {
		if len(l.outcomes) > 0 { // finished behind an older running message
			l.w.commits.offerRecords(l, l.outcomes) // copies them
			l.outcomes = l.outcomes[:0]
		}
		return
	}
	off := drover.Offset{Position: l.prog.offset, ID: l.prog.offID, CommittedAt: now, Member: l.w.cfg.Member}
	l.offered = off.Position
	l.w.commits.offer(l, off, l.outcomes) // copies them
	l.outcomes = l.outcomes[:0]
	if l.flags.Load()&(loopCommitted|loopQuiet) == 0 && (l.running > 0 || l.prog.undispatched() > 0) {
		// Every start waits for its record until this owner's first
		// commit: with more to start, that commit is asked for now, not
		// at the interval's end. A queue with nothing left to start gains
		// nothing from it (its offset goes with the others', or with the
		// member's drain).
		l.w.commits.firstWaits()
	}
}

// verifyClaim confirms the claim after a pause or a suspension; it reports
// false (and drops the queue) when the claim no longer holds.
func (l *queueLoop) verifyClaim() bool {
	v, ok := l.claim.(ClaimVerifier)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(l.stopCtx, writeTimeout)
	defer cancel()
	err := v.Verify(ctx)
	if err == nil || !isLost(err) {
		return true
	}
	l.lose("claim no longer holds after a pause (offset reset?)", err)
	return false
}

// lose drops the queue because another owner or an operator fenced it. The
// claim says so to whoever claimed the queue (Done, Err), which can claim it
// again.
func (l *queueLoop) lose(why string, err error) {
	l.logger().Warn("queue lost: "+why, "error", err)
	l.w.cfg.Metrics.IncrCounter(metrics.FencedTotal, 1, metrics.L("queue", l.name))
	l.markLost()
}

// trim removes what the committed offset covers, writing outcomes (the
// records of the messages it covers) in the same round trip. It runs only
// after a successful commit or release, so a fenced owner never trims.
func (l *queueLoop) trim(pos drover.Position, outcomes []drover.Outcome) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	// The starts of the messages it covers were recorded before now: the
	// trim, which deletes their starts fields, waits for those records.
	if err := l.w.starts.settled(ctx, l.w.starts.mark()); err != nil {
		l.logger().Warn("trim queue: waiting for start records", "error", err)
	}
	if err := l.trimLog(ctx, pos, outcomes); err != nil {
		l.logger().Warn("trim queue; the committer will try again", "offset", pos, "error", err)
		l.w.commits.oweTrim(l, pos)
	}
}

// inflightIDs returns up to n ids of the tasks in flight, sorted.
func (l *queueLoop) inflightIDs(n int) []string {
	l.mu.Lock()
	ids := make([]string, 0, len(l.inflight))
	for id := range l.inflight {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	sort.Strings(ids)
	return ids[:min(n, len(ids))]
}

// shutdown runs after stopCtx is cancelled: let the in-flight tasks end
// (or, when lost, kill them), then release the claim unless the queue was
// lost. The wait has no bound of its own for a stop that leaves: Stop and
// StopQueues kill the tasks at the drain timeout, counted from their call
// (abortTasks). A planned stop waits for each task's own timeout (the
// executor ends it then, plus its kill grace); only a task still running
// past that, stuck, is killed (handOverBound).
func (l *queueLoop) shutdown() {
	if l.lost.Load() {
		l.abortTasks()
	}
	var stuck <-chan time.Time
	if n := l.running; n > 0 && !l.lost.Load() {
		// Say what the stop waits for: an operator watching a slow
		// shutdown sees which tasks hold it, and for how long at most.
		if l.handingOver() {
			t := l.handOverBound()
			defer t.Stop()
			stuck = t.C()
		} else {
			l.logger().Info("draining: waiting for in-flight tasks", "tasks", n, "ids", l.inflightIDs(10), "drain_timeout", l.w.cfg.DrainTimeout)
		}
		defer func(start time.Time) {
			l.logger().Info("drained", "tasks", n, "took", time.Since(start).Round(time.Millisecond))
		}(time.Now())
	}
	for l.running > 0 {
		select {
		case r := <-l.results:
			l.finish(r)
		case <-stuck:
			l.logger().Warn("handing over: tasks still running past their timeout and the kill grace; killing them", "tasks", l.running)
			stuck = nil
			l.abortTasks()
		}
	}
	l.stopRunners() // every runner is idle now: they exit
	l.w.pool.leave(l.waiter.Load())
	l.releasePools() // a pool no queue uses any more is dropped
	// The committer gives back what it had not sent yet (and waits for
	// what it is sending): the release below covers it.
	o, waiting, trimOwed := l.w.commits.withdraw(l)
	if waiting {
		l.outcomes = append(o, l.outcomes...)
	}
	l.publish()
	if l.lost.Load() {
		return
	}
	off := drover.Offset{Position: l.prog.offset, ID: l.prog.offID, CommittedAt: l.w.cfg.Clock.Now(), Member: l.w.cfg.Member}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	// The starts recorded without waiting (held: attempts.go) reach Redis
	// before the release, so that the next owner reads their counts.
	if err := l.w.starts.settled(ctx, l.w.starts.mark()); err != nil {
		l.logger().Warn("release queue: start records not sent", "error", err)
	}
	if err := l.claim.Release(ctx, off); err != nil {
		l.releaseErr = err
		l.logger().Warn("release queue", "offset", off.Position, "error", err)
		return
	}
	if int64(off.Position) != l.committed.Load() || len(l.outcomes) > 0 || trimOwed {
		l.trim(off.Position, l.outcomes)
		l.outcomes = nil
	}
	l.committed.Store(int64(off.Position))
	l.logger().Debug("released queue", "offset", off.Position)
}

// handOverBound logs each task a planned stop waits for, with its deadline
// (its start plus the queue's timeout), and returns a timer at the latest
// moment a running task can end: now plus the queue's timeout (a task
// dispatched before the stop may start its attempt only now) plus the
// executor's kill grace. The executor ends every attempt by then; a task
// still running when it fires is stuck (an inline handler that ignores its
// context, a Redis write retried without end) and is killed, so that the
// next owner is never held forever. Run goroutine only.
func (l *queueLoop) handOverBound() drover.Timer {
	timeout := l.config().Timeout.Std()
	l.mu.Lock()
	for id, ts := range l.inflight {
		l.logger().Info("handing over: waiting for running task", "id", id, "deadline", ts.Started.Add(timeout).UTC().Format(time.RFC3339))
	}
	l.mu.Unlock()
	return l.w.cfg.Clock.NewTimer(timeout + l.w.cfg.KillGrace)
}

// publishIdle publishes the queue's state as it parks. A paused queue that
// parks reads its backlog: its lag is what an operator watches while it is
// paused, and it changes only when a wake-up (an enqueue) started the loop.
// A queue caught up has no backlog after its done offset, so its lag gauges
// are set without a read; its delayed and dead counts take one read, at
// most once per BacklogInterval, and none while its last read found none
// and nothing it saw since could have added one, until BacklogRefresh has
// passed (knownEmpty: a busy key parks after every message, and read
// every BacklogInterval, 10,000 of them were 2,000 backlog reads a second
// that said 0, 0, 0). A queue that parks waiting for a slot of the
// worker's pool reads it at most once per BacklogInterval too: with
// thousands of busy queues sharing the pool it parks once per message, and
// a read each time was one more round trip per message. A parked queue
// publishes nothing on a timer.
func (l *queueLoop) publishIdle(now time.Time) {
	l.publish()
	blocked := l.blockedNow()
	since := now.Sub(l.w.timeOf(l.lastBacklog))
	if !blocked && !(l.caughtUp && l.prog.undispatched() == 0) && since < l.w.cfg.BacklogInterval {
		return // waiting for a slot: read lately
	}
	if l.caughtUp && l.prog.undispatched() == 0 && !blocked {
		// The gauges were last set with snap.Lag (by this goroutine or
		// the backlogger): when it is 0 they say 0 already (or were never
		// set, until the next backlog read). Set on every park, they were
		// 5% of a busy worker's CPU, parking once per message.
		l.mu.Lock() // the backlogger sets it too
		lag := l.snap.Lag
		l.snap.Lag = 0
		l.mu.Unlock()
		if lag != 0 {
			q := metrics.L("queue", l.name)
			l.w.cfg.Metrics.SetGauge(metrics.Lag, 0, q)
			l.w.cfg.Metrics.SetGauge(metrics.OldestAge, 0, q)
		}
		if since < l.w.cfg.BacklogInterval || l.knownEmpty(since) {
			return
		}
	}
	l.publishBacklog(now)
}

// publishBacklog sets the queue's backlog gauges from one cheap read of the
// backlog after the done offset (committed soon).
func (l *queueLoop) publishBacklog(now time.Time) {
	l.lastBacklog = l.w.loopTime(now)
	l.countsAsked()
	l.w.backlogs.ask(l, l.prog.offset) // measured with other queues', off this goroutine
}

func ms(d time.Duration) float32 { return float32(d.Seconds() * 1000) }

// releasePools tells the executor, when it keeps pools, that the queue no
// longer uses them: a pool that no queue uses is stopped (idle children
// now, busy ones when their task ends).
func (l *queueLoop) releasePools() {
	if po, ok := l.w.cfg.Executor.(PoolReleaser); ok {
		po.ReleaseQueue(l.name)
	}
}

// stopRunners ends the idle runner goroutines (none may be busy): a parked
// queue keeps none.
func (l *queueLoop) stopRunners() {
	if l.tasks != nil {
		close(l.tasks)
		l.tasks, l.runners = nil, 0
	}
}

// loopTime is a moment of a loop's timers as the time since the worker's
// epoch (the clock's monotonic reading kept); zero is never. It takes 8
// bytes where a time.Time takes 24: with three per queue, the loop record
// fits the allocator's 448-byte class instead of the 512-byte one
// (docs/decisions.md, "Issue 14: one config watch per registry bucket").
type loopTime int64

// IsZero reports whether t was never set.
func (t loopTime) IsZero() bool { return t == 0 }

// loopTime returns now as a loopTime (never zero).
func (w *Worker) loopTime(now time.Time) loopTime {
	return loopTime(max(now.Sub(w.epoch), 1))
}

// timeOf returns the moment t stands for.
func (w *Worker) timeOf(t loopTime) time.Time { return w.epoch.Add(time.Duration(t)) }
