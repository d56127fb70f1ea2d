package worker

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
	"github.com/hashicorp/go-hclog"
)

// writeTimeout bounds one commit, release, trim, retry or dead-letter write.
const writeTimeout = 10 * time.Second

// queueLoop runs one owned queue. Its run goroutine owns the fetch, dispatch
// and commit state (prog, running, committed); task goroutines report back
// through results.
type queueLoop struct {
	w      *Worker
	name   string
	claim  Claim
	cfg    atomic.Pointer[drover.QueueConfig]
	logger hclog.Logger

	waiter  *poolWaiter   // the loop's place at the worker's pool
	wake    chan struct{} // enqueue notifications, pause changes, pool grants
	tasks   chan *slot    // to the runner goroutines
	results chan taskDone // from the runner goroutines
	runners int           // runner goroutines started (owned by run)

	stopCtx    context.Context // cancelled: stop fetching and dispatching
	stop       context.CancelFunc
	taskCtx    context.Context // cancelled: kill in-flight tasks
	abortTasks context.CancelFunc
	lost       atomic.Bool
	done       chan struct{} // closed when run has returned
	releaseErr error         // set before done is closed

	// Owned by the run goroutine.
	prog        progress
	fetched     drover.Position
	running     int
	committed   drover.Position
	lastCommit  time.Time
	lastPromote time.Time
	lastRead    time.Time
	lastBacklog time.Time
	caughtUp    bool             // the last read returned fewer than asked
	wasBlocked  bool             // paused or suspended at the last iteration
	outcomes    []drover.Outcome // records of finished messages, for the next trim

	mu       sync.Mutex // guards the fields below, read by State
	inflight map[string]*TaskState
	snap     QueueState
}

// taskDone is a task goroutine's report: whether the message is finished
// (succeeded, retried later or dead-lettered) or must run again elsewhere.
type taskDone struct {
	s    *slot
	done bool
}

func newQueueLoop(w *Worker, qc drover.QueueConfig, claim Claim) *queueLoop {
	l := &queueLoop{
		w: w, name: qc.Name, claim: claim,
		logger:   w.cfg.Logger.With("queue", qc.Name),
		wake:     make(chan struct{}, 1),
		tasks:    make(chan *slot),
		results:  make(chan taskDone),
		done:     make(chan struct{}),
		inflight: map[string]*TaskState{},
	}
	l.setConfig(qc)
	l.waiter = &poolWaiter{queue: qc.Name, weight: l.config().Weight, wake: l.wake}
	l.stopCtx, l.stop = context.WithCancel(context.Background())
	l.taskCtx, l.abortTasks = context.WithCancel(context.Background())
	off := claim.Offset().Position
	l.fetched, l.committed, l.prog.offset = off, off, off
	l.snap = QueueState{Name: qc.Name, Committed: off, Fetched: off, Ordered: qc.Ordered}
	return l
}

func (l *queueLoop) setConfig(qc drover.QueueConfig) {
	qc = qc.WithDefaults()
	l.cfg.Store(&qc)
}

func (l *queueLoop) config() *drover.QueueConfig { return l.cfg.Load() }

// signal wakes the run goroutine without blocking.
func (l *queueLoop) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// markLost stops the queue without any further write.
func (l *queueLoop) markLost() {
	l.lost.Store(true)
	l.abortTasks()
	l.stop()
}

func (l *queueLoop) run() {
	defer close(l.done)
	defer l.releasePools()
	defer l.abortTasks()
	timer := l.w.cfg.Clock.NewTimer(0)
	defer timer.Stop()
	for l.stopCtx.Err() == nil {
		now := l.w.cfg.Clock.Now()
		blocked := l.w.blocked(l.name)
		if l.wasBlocked && !blocked && !l.verifyClaim() {
			break
		}
		if blocked && !l.wasBlocked {
			l.releasePools() // a paused queue keeps no warm children
		}
		l.wasBlocked = blocked
		if now.Sub(l.lastPromote) >= l.w.cfg.PromoteInterval {
			l.promote(now)
		}
		if l.shouldFetch(now) {
			l.fetch(now)
		}
		l.dispatch()
		l.maybeCommit(now)
		l.publish()
		if now.Sub(l.lastBacklog) >= l.w.cfg.BacklogInterval {
			l.publishBacklog(now)
		}

		timer.Reset(l.nextTimer(l.w.cfg.Clock.Now()))
		select {
		case r := <-l.results:
			l.finish(r)
			l.finishReady()
		case <-l.wake:
			l.caughtUp = false
		case <-timer.C():
		case <-l.stopCtx.Done():
		}
	}
	l.shutdown()
}

// nextTimer returns how long the loop may sleep before it has timed work.
func (l *queueLoop) nextTimer(now time.Time) time.Duration {
	c := l.w.cfg
	d := l.lastPromote.Add(c.PromoteInterval).Sub(now)
	if r := l.lastBacklog.Add(c.BacklogInterval).Sub(now); r < d {
		d = r
	}
	if l.caughtUp {
		if r := l.lastRead.Add(c.PollInterval).Sub(now); r < d {
			d = r
		}
	}
	if l.prog.offset != l.committed {
		if r := l.lastCommit.Add(c.CommitInterval).Sub(now); r < d {
			d = r
		}
	}
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}

func (l *queueLoop) promote(now time.Time) {
	l.lastPromote = now
	ctx, cancel := context.WithTimeout(l.stopCtx, writeTimeout)
	defer cancel()
	n, err := l.w.cfg.Log.PromoteDue(ctx, l.name, now, 1000)
	if err != nil {
		if l.stopCtx.Err() == nil {
			l.logger.Warn("promote due messages", "error", err)
		}
		return
	}
	if n > 0 {
		l.caughtUp = false
	}
}

// shouldFetch: keep one batch of read-ahead beyond what is dispatched, and
// do not read a caught-up queue again before a wake-up or the poll interval.
func (l *queueLoop) shouldFetch(now time.Time) bool {
	if l.w.blocked(l.name) || l.prog.undispatched() >= l.w.cfg.BatchSize {
		return false
	}
	return !l.caughtUp || now.Sub(l.lastRead) >= l.w.cfg.PollInterval
}

func (l *queueLoop) fetch(now time.Time) {
	l.lastRead = now
	n := l.w.cfg.BatchSize
	ctx, cancel := context.WithTimeout(l.stopCtx, writeTimeout)
	defer cancel()
	start := time.Now()
	ds, err := l.w.cfg.Log.ReadAfter(ctx, l.name, l.fetched, n)
	// One series per worker, not per queue: a summary per idle queue costs
	// more memory than the queue's loop itself.
	l.w.cfg.Metrics.AddSample(metrics.FetchDuration, ms(time.Since(start)))
	if err != nil {
		if l.stopCtx.Err() == nil {
			l.logger.Warn("read queue", "after", l.fetched, "error", err)
		}
		l.caughtUp = true // back off until the poll interval
		return
	}
	l.caughtUp = len(ds) < n
	if len(ds) == 0 {
		return
	}
	l.prog.add(ds)
	l.fetched = ds[len(ds)-1].Position
}

// dispatch starts as many fetched tasks as the queue's concurrency and the
// worker's pool allow.
func (l *queueLoop) dispatch() {
	if l.w.blocked(l.name) {
		l.w.pool.leave(l.waiter) // hand back slots granted while paused
		return
	}
	cfg := l.config()
	for l.prog.undispatched() > 0 && l.running < cfg.Concurrency {
		if !l.w.pool.tryAcquire(l.waiter) {
			return // a release signals l.wake
		}
		s := l.prog.takeNext()
		l.running++
		if l.running > l.runners {
			// Runners are long-lived: a task costs no goroutine start and
			// no stack growth. There is one per task in flight at most.
			l.runners++
			go l.runner()
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
	l.running--
	l.w.pool.release(l.name)
	if r.done {
		l.keepOutcome(r.s)
		l.prog.complete(r.s)
	}
}

// maybeCommit commits the offset when it moved and the commit interval has
// passed, or at once when the queue is idle.
func (l *queueLoop) maybeCommit(now time.Time) {
	if l.prog.offset == l.committed || l.w.suspended.Load() || l.lost.Load() {
		return
	}
	idle := l.running == 0 && l.prog.undispatched() == 0
	if !idle && now.Sub(l.lastCommit) < l.w.cfg.CommitInterval {
		return
	}
	off := drover.Offset{Position: l.prog.offset, ID: l.prog.offID, CommittedAt: now, Member: l.w.cfg.Member}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	start := time.Now()
	err := l.claim.Commit(ctx, off)
	l.w.cfg.Metrics.AddSample(metrics.CommitDuration, ms(time.Since(start)))
	if err != nil {
		if isLost(err) {
			l.lose(fmt.Sprintf("commit of %d refused", off.Position), err)
			return
		}
		l.logger.Warn("commit offset", "offset", off.Position, "error", err)
		l.lastCommit = now // retry after the interval
		return
	}
	l.w.cfg.Metrics.IncrCounter(metrics.CommitsTotal, 1, metrics.L("queue", l.name))
	l.committed, l.lastCommit = off.Position, now
	l.trim(off.Position)
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
	l.logger.Warn("queue lost: "+why, "error", err)
	l.w.cfg.Metrics.IncrCounter(metrics.FencedTotal, 1, metrics.L("queue", l.name))
	l.markLost()
}

// trim removes what the committed offset covers. It runs only after a
// successful commit, so a fenced owner never trims.
func (l *queueLoop) trim(pos drover.Position) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := l.trimLog(ctx, pos); err != nil {
		l.logger.Warn("trim queue", "offset", pos, "error", err)
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

// shutdown runs after stopCtx is cancelled: drain (or, when lost, kill) the
// in-flight tasks, then release the claim unless the queue was lost.
func (l *queueLoop) shutdown() {
	if l.lost.Load() {
		l.abortTasks()
	}
	drain := l.w.cfg.Clock.NewTimer(l.w.cfg.DrainTimeout)
	defer drain.Stop()
	if n := l.running; n > 0 && !l.lost.Load() {
		// Say what the stop waits for: an operator watching a slow
		// shutdown sees which tasks hold it, and for how long at most.
		l.logger.Info("draining: waiting for in-flight tasks", "tasks", n, "ids", l.inflightIDs(10), "drain_timeout", l.w.cfg.DrainTimeout)
		defer func(start time.Time) {
			l.logger.Info("drained", "tasks", n, "took", time.Since(start).Round(time.Millisecond))
		}(time.Now())
	}
	for l.running > 0 {
		select {
		case r := <-l.results:
			l.finish(r)
		case <-drain.C():
			l.logger.Warn("drain timeout: killing in-flight tasks", "tasks", l.running)
			l.abortTasks()
		}
	}
	close(l.tasks) // every runner is idle now: they exit
	l.w.pool.leave(l.waiter)
	l.publish()
	if l.lost.Load() {
		return
	}
	off := drover.Offset{Position: l.prog.offset, ID: l.prog.offID, CommittedAt: l.w.cfg.Clock.Now(), Member: l.w.cfg.Member}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := l.claim.Release(ctx, off); err != nil {
		l.releaseErr = err
		l.logger.Warn("release queue", "offset", off.Position, "error", err)
		return
	}
	if off.Position != l.committed || len(l.outcomes) > 0 {
		l.trim(off.Position)
	}
	l.logger.Debug("released queue", "offset", off.Position)
}

// publishBacklog sets the queue's backlog gauges from one cheap read.
func (l *queueLoop) publishBacklog(now time.Time) {
	l.lastBacklog = now
	br, ok := l.w.cfg.Log.(BacklogReader)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(l.stopCtx, writeTimeout)
	defer cancel()
	b, err := br.Backlog(ctx, l.name, l.committed)
	if err != nil {
		if l.stopCtx.Err() == nil {
			l.logger.Debug("read backlog", "error", err)
		}
		return
	}
	q := metrics.L("queue", l.name)
	m := l.w.cfg.Metrics
	m.SetGauge(metrics.Lag, float32(b.Lag), q)
	m.SetGauge(metrics.OldestAge, float32(b.OldestAge.Seconds()), q)
	m.SetGauge(metrics.Delayed, float32(b.Delayed), q)
	m.SetGauge(metrics.Dead, float32(b.Dead), q)
	l.mu.Lock()
	l.snap.Lag = b.Lag
	l.mu.Unlock()
}

func ms(d time.Duration) float32 { return float32(d.Seconds() * 1000) }

// releasePools stops the queue's pooled children (idle ones now, busy ones
// when their task ends), when the executor keeps any.
func (l *queueLoop) releasePools() {
	if po, ok := l.w.cfg.Executor.(PoolReleaser); ok {
		po.ReleaseQueue(l.name)
	}
}
