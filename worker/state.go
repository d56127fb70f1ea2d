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
	// Pools are the warm children of pooled routes (docs/process-pool.md).
	Pools []executor.PoolState `json:"pools,omitempty"`
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
	Parked   bool        `json:"parked"`
	InFlight []TaskState `json:"in_flight"`
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
}

// publish copies the run goroutine's counters for State.
func (l *queueLoop) publish() {
	l.mu.Lock()
	l.snap.Committed = drover.Position(l.committed.Load())
	l.snap.Done = l.prog.offset
	l.snap.Fetched = l.fetched
	l.snap.Buffered = l.prog.undispatched()
	l.snap.Ordered = l.config().Ordered
	l.mu.Unlock()
}

func (l *queueLoop) state(now time.Time) QueueState {
	l.mu.Lock()
	defer l.mu.Unlock()
	qs := l.snap
	qs.InFlight = make([]TaskState, 0, len(l.inflight))
	for _, t := range l.inflight {
		ts := *t
		ts.Runtime = now.Sub(ts.Started).Seconds()
		qs.InFlight = append(qs.InFlight, ts)
	}
	sort.Slice(qs.InFlight, func(i, j int) bool { return qs.InFlight[i].Position < qs.InFlight[j].Position })
	return qs
}

// State returns a snapshot of the worker's live state.
func (w *Worker) State() State {
	now := w.cfg.Clock.Now()
	st := State{
		Member: w.cfg.Member, Suspended: w.suspended.Load(), Paused: *w.pause.Load(),
		Capacity: w.cfg.Capacity, InUse: w.pool.inUse(),
	}
	w.mu.Lock()
	loops := make([]*queueLoop, 0, len(w.queues))
	for _, l := range w.queues {
		loops = append(loops, l)
	}
	w.mu.Unlock()
	for _, l := range loops {
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

// Job returns the in-flight attempt of message id in queue, if this worker
// runs it now. It costs one map lookup (no scan of the owned queues).
func (w *Worker) Job(queue, id string) (TaskState, bool) {
	w.mu.Lock()
	l := w.queues[queue]
	w.mu.Unlock()
	if l == nil {
		return TaskState{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.inflight[id]
	if !ok {
		return TaskState{}, false
	}
	ts := *t
	ts.Runtime = w.cfg.Clock.Now().Sub(ts.Started).Seconds()
	return ts, true
}
