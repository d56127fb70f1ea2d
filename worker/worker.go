package worker

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/shrink"
	"github.com/drover-dev/drover/metrics"
)

// Worker runs the queues this member owns. The membership reconciler calls
// Start when the member has claimed a queue and Stop (or Abort) when it must
// give one up; pause flags and the session state arrive through SetPause and
// SetSuspended. All methods are safe for concurrent use.
type Worker struct {
	cfg     Config
	epoch   time.Time // the clock at New: the loops' timers count from it (loopTime)
	pool    *pool
	configs configInterner // one copy of each distinct queue configuration

	mu     sync.Mutex
	queues map[string]*queueLoop
	// queuesPeak is the most queues owned since queues was last rebuilt:
	// a map keeps the table of its largest size, so forget rebuilds it
	// once most of those queues are gone (shrink.Map).
	queuesPeak int

	// One per worker, whatever the number of queues (DESIGN.md §10).
	idle     *idleScheduler // due times of parked queues, the backstop check
	routes   *router        // wake-up routes owed
	commits  *committer     // coalesced offset commits
	reads    *reader        // coalesced reads
	promotes *promoter      // coalesced promotions
	starts   *starter       // coalesced start records (attempts.go)
	pushes   pushes         // messages carried by wake-ups (pushed.go)
	backlogs *backlogger    // coalesced backlog reads
	stages   stages         // debug counters of a message's way to its start (stages.go)

	pause     atomic.Pointer[PauseState]
	suspended atomic.Bool
	// blockGen counts the times every queue may have been blocked (a
	// pause of all or of the member, a suspension, a freeze): a queue
	// that wakes under a newer generation than it last saw verifies its
	// claim first, though it slept through the pause while parked.
	blockGen atomic.Uint64

	// loopGoroutines counts the queue loops' run goroutines: parked loops
	// have none.
	loopGoroutines atomic.Int64
	// The release of memory after a burst (release.go): whether a loop ran
	// since the last release, when the last one stopped (cfg.Clock, Unix
	// nanoseconds), and what returns the memory (tests count it).
	worked    atomic.Bool
	drainedAt atomic.Int64
	release   func()
	// iterationCount counts the queue loops' iterations (tests: "the loop
	// has looked since").
	iterationCount atomic.Int64

	// The freeze guard (Run): a heartbeat every freezeBeat by cfg.Clock; a
	// stale beat or a detected freeze blocks every queue until the session
	// is confirmed.
	lastBeat atomic.Pointer[time.Time] // the clock's time at the last beat
	beating  atomic.Bool               // Run is running
	frozen   atomic.Bool               // a freeze was detected and not yet confirmed away
}

// The freeze guard's beat and the gap that counts as a freeze.
const (
	freezeBeat      = 100 * time.Millisecond
	freezeThreshold = time.Second
)

// PauseState is the set of pause flags that concern this worker.
type PauseState struct {
	All    bool            `json:"all"`
	Member bool            `json:"member"`
	Queues map[string]bool `json:"queues,omitempty"`
}

// New validates cfg and returns a Worker that owns no queue yet.
func New(cfg Config) (*Worker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, pool: newPool(cfg.Capacity), queues: map[string]*queueLoop{}, epoch: cfg.Clock.Now(), release: debug.FreeOSMemory}
	w.idle = newIdleScheduler(w)
	w.routes = newRouter(w)
	w.commits = newCommitter(w)
	w.reads = newReader(cfg.Store, cfg.Metrics, &w.stages)
	w.promotes = newPromoter(cfg.Store)
	w.starts = newStarter(cfg.Store, cfg.Clock)
	w.backlogs = newBacklogger(cfg.Store, cfg.Metrics)
	w.pause.Store(&PauseState{})
	return w, nil
}

// Start begins running an owned queue from the claim's committed offset. It
// returns at once, without I/O (the queue's wake-ups are routed here in the
// background: Store.RouteWakeups); the queue runs until Stop, Abort, or a fenced commit,
// parked (without a goroutine) whenever it has nothing to do.
func (w *Worker) Start(qc drover.QueueConfig, claim Claim) error {
	if err := qc.Validate(); err != nil {
		return fmt.Errorf("start queue: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.queues[qc.Name]; ok {
		return fmt.Errorf("start queue %s: already running", qc.Name)
	}
	l := newQueueLoop(w, qc, claim)
	w.queues[qc.Name] = l
	w.queuesPeak = max(w.queuesPeak, len(w.queues))
	w.idle.ensureRunning()
	w.idle.started(qc.Name) // checked with the others started meanwhile
	w.routes.add(qc.Name)   // then checked again once its wake-ups come here
	return nil
}

// Configure replaces the configuration of a running queue; tasks started
// from now on use it. It does nothing for a queue this worker does not run.
func (w *Worker) Configure(qc drover.QueueConfig) error {
	if err := qc.Validate(); err != nil {
		return fmt.Errorf("configure queue: %w", err)
	}
	l := w.loop(qc.Name)
	if l != nil {
		l.setConfig(qc) // a parked loop reads it when it runs again
		l.nudge()
	}
	return nil
}

// Stop gives a queue up gracefully: StopQueues of that one queue. It
// returns the release's error.
func (w *Worker) Stop(ctx context.Context, queue string, kind drover.StopKind) error {
	var err error
	w.StopQueues(ctx, []string{queue}, kind, func(_ string, e error) { err = e })
	return err
}

// StopQueues gives queues up gracefully, all at once: every one of them
// stops starting tasks at this call, its running tasks end, then its claim
// is released with the final offset. It blocks until that is done for all
// of them, awaiting each in turn on the caller's goroutine (no goroutine
// per queue, DESIGN.md §10), and calls stopped, if set, with each queue and
// its release's error as it is awaited (at once for a queue this worker
// does not run).
//
// kind bounds the wait. drover.StopLeave (the member stops or gives its
// queues up): one drain timeout for all of them, counted from this call,
// then the tasks still running are killed. drover.StopPlanned (the queues
// move for balance): each task's own timeout, never the drain timeout:
// nothing is killed. A StopLeave of a queue whose planned stop is in
// progress cuts that wait to the drain timeout from this call, and
// returns when the queue is released. Cancelling ctx kills the tasks still
// running at once (the session is lost).
func (w *Worker) StopQueues(ctx context.Context, queues []string, kind drover.StopKind, stopped func(queue string, err error)) {
	if stopped == nil {
		stopped = func(string, error) {}
	}
	var drain <-chan time.Time
	if kind != drover.StopPlanned {
		t := w.cfg.Clock.NewTimer(w.cfg.DrainTimeout) // counted from this call
		defer t.Stop()
		drain = t.C()
	}
	loops := make([]*queueLoop, 0, len(queues))
	for _, q := range queues { // tell every loop first: all drain at once
		if l := w.loop(q); l != nil {
			l.endQuiet(kind)
			loops = append(loops, l)
		} else {
			stopped(q, nil)
		}
	}
	shutDownAll(loops)
	for _, l := range loops {
		if w.await(ctx, l, drain) && drain != nil && ctx.Err() == nil {
			// The drain timeout passed: the other queues' tasks are
			// killed as soon as they are awaited.
			expired := make(chan time.Time)
			close(expired)
			drain = expired
		}
		w.forget(l)
		stopped(l.name, l.releaseErr)
	}
}

// await waits until l has shut down. When drain fires (a leaving stop's
// drain timeout) or ctx ends first, l's tasks are killed, and await then
// reports true once l has shut down.
func (w *Worker) await(ctx context.Context, l *queueLoop, drain <-chan time.Time) (cut bool) {
	done := l.doneCh()
	select {
	case <-done:
		return false
	case <-drain:
		l.logger().Warn("drain timeout: killing in-flight tasks", "ids", l.inflightIDs(10), "drain_timeout", w.cfg.DrainTimeout)
	case <-ctx.Done():
	}
	l.abortTasks()
	<-done
	return true
}

// Abort drops queues at once, as when the session is lost: every one is
// marked lost and its in-flight tasks killed first, then each is awaited
// in turn; nothing more is written to Redis or ZooKeeper for them. It
// blocks until their tasks are gone. Queues this worker does not run are
// ignored.
func (w *Worker) Abort(queues ...string) {
	loops := make([]*queueLoop, 0, len(queues))
	for _, q := range queues {
		if l := w.loop(q); l != nil {
			loops = append(loops, l)
		}
	}
	w.abort(loops)
}

// AbortAll drops every queue at once (session lost), as Abort does.
func (w *Worker) AbortAll() { w.abort(w.loops()) }

// abort marks every loop of loops lost, then awaits each.
func (w *Worker) abort(loops []*queueLoop) {
	for _, l := range loops {
		l.markLostQuiet()
	}
	shutDownAll(loops)
	for _, l := range loops {
		<-l.doneCh()
		w.forget(l)
	}
}

// loops returns the running queue loops.
func (w *Worker) loops() []*queueLoop {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*queueLoop, 0, len(w.queues))
	for _, l := range w.queues {
		out = append(out, l)
	}
	return out
}

// SetPause replaces the pause flags. Paused queues start no new task;
// in-flight tasks finish and ownership is kept.
//
// Resuming verifies the claims of the queues that were paused (an operator
// may have reset their offsets meanwhile) without starting every parked
// queue at once: a queue resumed by name runs at once and verifies; after
// a pause of all or of the member, the idle scheduler verifies the parked
// queues a batch per pass (idle.go), and any of them that runs earlier
// verifies first.
func (w *Worker) SetPause(p PauseState) {
	old := w.pause.Swap(&p)
	if p.All || p.Member {
		w.blockGen.Add(1)
	}
	var resumed []*queueLoop
	w.mu.Lock()
	for q, paused := range p.Queues {
		if l := w.queues[q]; l != nil && paused {
			l.needVerify.Store(true)
		}
	}
	for q, paused := range old.Queues {
		if l := w.queues[q]; l != nil && paused && !p.Queues[q] {
			resumed = append(resumed, l)
		}
	}
	w.mu.Unlock()
	for _, l := range resumed {
		l.signal() // verifies its claim, then reads
	}
	if (old.All || old.Member) && !p.All && !p.Member {
		w.idle.missed() // a pass now: it starts verifying the parked queues
	}
	w.wakeAll()
}

// SetSuspended says whether the coordination session is suspended
// (disconnected, not yet lost): while it is, no task starts and nothing is
// committed.
func (w *Worker) SetSuspended(s bool) {
	if s {
		w.blockGen.Add(1)
	}
	if w.suspended.Swap(s) && !s {
		w.idle.missed() // verify the parked queues, a batch per pass
	}
	w.wakeAll()
}

// Wake tells a queue's loop that messages were enqueued: a parked queue
// runs again.
func (w *Worker) Wake(queue string) {
	if l := w.loop(queue); l != nil {
		l.signal()
	}
}

// WakeWith tells a queue's loop that a message was enqueued, and what it
// is: wk carries it (wk.Entry), with the position of the message before it
// (wk.Prev). The loop takes it without a read when its last read ended
// exactly there (pushed.go), and reads otherwise.
func (w *Worker) WakeWith(wk drover.Wakeup) {
	if l := w.loop(wk.Queue); l != nil {
		if wk.Entry != nil {
			w.pushes.add(l, wk)
			if l.phase.Load() == phaseEnded {
				w.pushes.forget(l) // it ended meanwhile: nothing takes it
				return
			}
		}
		l.signal()
	}
}

// WakeAt tells a queue's loop that messages were enqueued, delayed messages
// among them, the earliest due at due: the queue reads now and promotes at
// due, parked or not.
func (w *Worker) WakeAt(queue string, due time.Time) {
	if l := w.loop(queue); l != nil {
		w.idle.at(queue, due)
		l.countsMoved() // a delayed message more: its next park reads the counts
		l.signal()
	}
}

// MissedWakeups says wake-ups may have been lost (the subscription
// reconnected, or its reader fell behind): every parked queue is checked at
// once, in one amortised pass, instead of waiting for the next
// PollInterval.
func (w *Worker) MissedWakeups() {
	w.idle.missed()
}

// loop returns queue's loop, or nil.
func (w *Worker) loop(queue string) *queueLoop {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queues[queue]
}

// loopStarted and loopStopped count the queue loops' run goroutines.
func (w *Worker) loopStarted() {
	if w.loopGoroutines.Add(1) == 1 {
		w.commits.busy() // the member was drained: it is busy from now
		w.worked.Store(true)
	}
}
func (w *Worker) loopStopped() {
	if w.loopGoroutines.Add(-1) == 0 {
		w.drainedAt.Store(w.cfg.Clock.Now().UnixNano())
		w.commits.drained() // the member drained: commit without waiting
	}
}

// PublishGauges sets the worker's own gauges (in-flight tasks, owned
// queues). The caller runs it periodically.
func (w *Worker) PublishGauges() {
	w.cfg.Metrics.SetGauge(metrics.InFlight, float32(w.pool.inUse()))
	w.cfg.Metrics.SetGauge(metrics.OwnedQueues, float32(len(w.Owned())))
}

// Owned returns the queues this worker runs, sorted.
func (w *Worker) Owned() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	qs := make([]string, 0, len(w.queues))
	for q := range w.queues {
		qs = append(qs, q)
	}
	sort.Strings(qs)
	return qs
}

// Run runs the freeze guard until ctx ends. A process resumed after a
// freeze (SIGSTOP past the session timeout, say) has goroutines that run
// before anything notices the session is gone: a queue loop could start a
// task of a queue that another member owns by now. While Run runs, a
// heartbeat older than a second blocks every queue at once, whatever runs
// first after the resume; the guard then holds the queues until
// Config.Confirm proves the session with a fresh round trip.
func (w *Worker) Run(ctx context.Context) error {
	w.beat()
	w.beating.Store(true)
	defer w.beating.Store(false)
	t := w.cfg.Clock.NewTimer(freezeBeat)
	defer t.Stop()
	w.renew()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		if gap := w.sinceBeat(); gap > freezeThreshold && w.cfg.Confirm != nil {
			w.frozen.Store(true)
			w.blockGen.Add(1)
			w.cfg.Logger.Warn("the worker was frozen: no task starts until the session is confirmed", "gap", gap)
			for {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err := w.cfg.Confirm(cctx)
				cancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return nil
				}
				w.cfg.Logger.Debug("session not confirmed yet", "error", err)
				t.Reset(freezeBeat)
				select {
				case <-ctx.Done():
					return nil
				case <-t.C():
				}
			}
			w.frozen.Store(false)
			w.cfg.Logger.Info("session confirmed after the freeze")
			w.beat()
			w.renew()
			w.wakeAll()
			w.idle.missed()
		} else {
			w.beat()
			w.renew()
		}
		t.Reset(freezeBeat)
	}
}

// beat records a heartbeat of the freeze guard.
func (w *Worker) beat() {
	now := w.cfg.Clock.Now()
	w.lastBeat.Store(&now)
}

// sinceBeat returns how long ago the last heartbeat was.
func (w *Worker) sinceBeat() time.Duration {
	last := w.lastBeat.Load()
	if last == nil {
		return 0
	}
	return w.cfg.Clock.Now().Sub(*last)
}

// renew renews the task lease (Config.Renew). Only Run calls it, after
// checking the beat: a worker that was frozen renews nothing until its
// session is confirmed.
func (w *Worker) renew() {
	if w.cfg.Renew != nil {
		w.cfg.Renew()
	}
}

// freezePending reports whether the freeze guard holds the worker: a freeze
// was seen (or the beat is stale, whichever goroutine looks first after a
// resume) and the session is not confirmed yet.
func (w *Worker) freezePending() bool {
	return w.beating.Load() && w.cfg.Confirm != nil && (w.frozen.Load() || w.sinceBeat() > freezeThreshold)
}

// blocked reports whether queue may not start tasks now.
func (w *Worker) blocked(queue string) bool {
	if w.suspended.Load() {
		return true
	}
	if w.beating.Load() && w.cfg.Confirm != nil {
		if w.frozen.Load() || w.sinceBeat() > freezeThreshold {
			return true
		}
	}
	p := w.pause.Load()
	return p.All || p.Member || p.Queues[queue]
}

// wakeAll wakes the loops that a change of pause, suspension or freeze may
// concern: those running and those parked with work left. The other parked
// loops stay parked (a pause must not start 25,000 goroutines); when they
// run again, the block generation makes them verify their claim.
func (w *Worker) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.queues {
		if !l.parked() || l.pendingWork.Load() {
			l.signal()
		}
	}
}

// forget removes a finished loop (if it is still the registered one).
func (w *Worker) forget(l *queueLoop) {
	w.mu.Lock()
	if w.queues[l.name] == l {
		delete(w.queues, l.name)
		w.queues = shrink.Map(w.queues, &w.queuesPeak)
	}
	w.mu.Unlock()
	w.idle.poke() // it exits once the worker owns no queue
}
