package worker

import (
	"sort"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/worker/executor"
)

// State is a worker's live state, served at /debug/state.
type State struct {
	Member    string       `json:"member"`
	Suspended bool         `json:"suspended"`
	Paused    PauseState   `json:"paused"`
	Capacity  int          `json:"capacity"`
	InUse     int          `json:"in_use"`
	Queues    []QueueState `json:"queues"`
	// QueueNames lists the owned queues, sorted, in the names-only form
	// (/debug/state?queues=names), which leaves Queues out.
	QueueNames []string `json:"queue_names,omitempty"`
	// Pools are the warm children of pooled routes (docs/process-pool.md).
	Pools []executor.PoolState `json:"pools,omitempty"`
	// Stages counts where messages' time went on the way to their start.
	Stages *Stages `json:"stages,omitempty"`
}

// QueueState is one owned queue's state.
type QueueState struct {
	Name      string          `json:"name"`
	Committed drover.Position `json:"committed"` // the last committed offset
	Done      drover.Position `json:"done"`      // the contiguous completed position (committed soon)
	Fetched   drover.Position `json:"fetched"`   // the last position read
	Buffered  int             `json:"buffered"`  // fetched, waiting for dispatch
	Lag       int64           `json:"lag"`       // messages after the committed offset, as last sampled
	Ordered   bool            `json:"ordered"`
	Paused    bool            `json:"paused"`
	// Parked: the queue has nothing to do and no goroutine; an enqueue's
	// wake-up, a due time or the backstop check starts it again.
	Parked bool `json:"parked"`
	// RateLimited: work waits for a token of the queue's rate limit
	// (drover.RateLimit): held back on purpose, not lagging.
	RateLimited bool        `json:"rate_limited,omitempty"`
	InFlight    []TaskState `json:"in_flight"`
}

// TaskState is one running task.
type TaskState struct {
	ID       string          `json:"id"`
	Task     string          `json:"task"`
	Attempt  int             `json:"attempt"`
	Position drover.Position `json:"position"`
	PID      int             `json:"pid"` // 0 until the process has started, and for inline handlers
	Started  time.Time       `json:"started"`
	Runtime  float64         `json:"runtime_seconds"`
	// CancelledBy: an operator cancelled the task and it is being stopped
	// (Worker.Cancel).
	CancelledBy string `json:"cancelled_by,omitempty"`

	cancel chan struct{} // closed by Worker.Cancel; nil for inline handlers
	then   CancelThen    // what follows the cancel; guarded by the loop's mu
}

// asOf returns a copy of the in-flight attempt t with its runtime at now.
// The loop's mu is held.
func (t *TaskState) asOf(now time.Time) TaskState {
	ts := *t
	ts.Runtime = now.Sub(ts.Started).Seconds()
	return ts
}

// loopSnap is what State shows of a queue's counters, as the run goroutine
// last published them: only the numbers, so that each owned queue keeps 40
// bytes for it (the name is the loop's, Ordered its config's).
type loopSnap struct {
	Committed, Done, Fetched drover.Position
	Buffered                 int
	Lag                      int64
}

// publish copies the run goroutine's counters for State.
func (l *queueLoop) publish() {
	l.mu.Lock()
	l.snap.Committed = drover.Position(l.committed.Load())
	l.snap.Done = l.prog.offset
	l.snap.Fetched = l.fetched
	l.snap.Buffered = l.prog.undispatched()
	l.mu.Unlock()
}

func (l *queueLoop) state(now time.Time) QueueState {
	ordered := l.config().Ordered
	l.mu.Lock()
	defer l.mu.Unlock()
	qs := QueueState{
		Name: l.name, Committed: l.snap.Committed, Done: l.snap.Done, Fetched: l.snap.Fetched,
		Buffered: l.snap.Buffered, Lag: l.snap.Lag, Ordered: ordered, RateLimited: l.rateHeld.Load(),
	}
	qs.InFlight = make([]TaskState, 0, len(l.inflight))
	for _, t := range l.inflight {
		qs.InFlight = append(qs.InFlight, t.asOf(now))
	}
	sort.Slice(qs.InFlight, func(i, j int) bool { return qs.InFlight[i].Position < qs.InFlight[j].Position })
	return qs
}

// State returns a snapshot of the worker's live state.
func (w *Worker) State() State {
	st := w.stateHeader()
	now := w.cfg.Clock.Now()
	for _, l := range w.loops() {
		qs := l.state(now)
		qs.Paused = w.blocked(l.name)
		qs.Parked = l.parked()
		st.Queues = append(st.Queues, qs)
	}
	sort.Slice(st.Queues, func(i, j int) bool { return st.Queues[i].Name < st.Queues[j].Name })
	if po, ok := w.cfg.Executor.(PoolReleaser); ok {
		st.Pools = po.PoolStates()
	}
	return st
}

// StateNames is State with the owned queues' names only (QueueNames), not
// their states: at 25,000 queues the full form is tens of megabytes of
// JSON, which a poller that needs only who runs what should not make the
// worker build.
func (w *Worker) StateNames() State {
	st := w.stateHeader()
	st.QueueNames = w.Owned()
	if po, ok := w.cfg.Executor.(PoolReleaser); ok {
		st.Pools = po.PoolStates()
	}
	return st
}

func (w *Worker) stateHeader() State {
	return State{
		Member: w.cfg.Member, Suspended: w.suspended.Load(), Paused: *w.pause.Load(),
		Capacity: w.cfg.Capacity, InUse: w.pool.inUse(), Stages: w.stageStats(),
	}
}

// Job returns the in-flight attempt of message id in queue, if this worker
// runs it now. It costs one map lookup (no scan of the owned queues).
func (w *Worker) Job(queue, id string) (TaskState, bool) {
	l := w.loop(queue)
	if l == nil {
		return TaskState{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.inflight[id]
	if !ok {
		return TaskState{}, false
	}
	return t.asOf(w.cfg.Clock.Now()), true
}

// doneCh returns a channel closed once the loop has shut down. It is made
// when first asked for (Stop, Abort): a loop that runs until the worker
// exits never needs one.
func (l *queueLoop) doneCh() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
		if l.ended {
			close(l.done)
		}
	}
	return l.done
}

// closeDone records that the loop has shut down (releaseErr is set).
func (l *queueLoop) closeDone() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = true
	if l.done != nil {
		close(l.done)
	}
}
