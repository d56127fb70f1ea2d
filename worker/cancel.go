package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/drover-dev/drover"
)

// Cancelling a running task (docs/semantics.md, "Cancelling a running
// task"). An operator names the queue and the message; the request reaches
// the queue's owner (POST /debug/cancel, through the owner lookup of
// package jobs), whose Cancel closes the attempt's cancel channel. The
// executor then stops the task as at a timeout — SIGTERM to its process
// group, SIGKILL after the kill grace; a pooled task's child goes with it —
// and reports executor.OutcomeCancelled. The runner then does what the
// operator chose (CancelThen) and records who cancelled in the failure
// (drover.Failure.CancelledBy), which the job status and the dead letter
// show.
//
// Nothing is written before the task has stopped: a cancel that arrives as
// the task ends on its own changes nothing (the task's own outcome stands),
// and a cancel of a queue that is lost at the same moment is an abort like
// any other (the next owner runs the message again).

// CancelThen is what happens to a cancelled message.
type CancelThen string

// The choices of CancelThen.
const (
	// CancelDefault: dead-letter the message, except on an ordered queue
	// with on_failure park, which parks at it (CancelPark): order is kept
	// and the operator resolves the head as any parked head.
	CancelDefault CancelThen = ""
	// CancelDead moves the message to the dead letters, with the reason
	// "cancelled by <who>", whatever the queue's on_failure.
	CancelDead CancelThen = "dead"
	// CancelRetry runs the message again as its next attempt, at once
	// (in place on an ordered queue), even past max_attempts: the
	// operator asked for it.
	CancelRetry CancelThen = "retry"
	// CancelPark parks an ordered queue with on_failure park at the
	// message; elsewhere it is CancelDead.
	CancelPark CancelThen = "park"
)

// ParseCancelThen checks an operator's choice ("" is the default).
func ParseCancelThen(s string) (CancelThen, error) {
	switch t := CancelThen(s); t {
	case CancelDefault, CancelDead, CancelRetry, CancelPark:
		return t, nil
	}
	return "", fmt.Errorf("then: want retry, dead or park, have %q", s)
}

// Errors of Cancel.
var (
	// ErrNotRunningHere: the message does not run on this worker now.
	ErrNotRunningHere = errors.New("cancel: the message does not run here")
	// ErrCancelInline: an inline handler runs in the worker's process and
	// cannot be killed.
	ErrCancelInline = errors.New("cancel: an inline handler cannot be killed (it runs in the worker process)")
)

// Cancel asks the running attempt of message id in queue to stop: by names
// who cancels (for the record), then what follows. It does not block: the
// task is stopped by its executor, and the attempt's record is written when
// it has. It returns the task's state, with CancelledBy set; cancelling a
// task already being cancelled changes nothing and succeeds. It fails with
// ErrNotRunningHere when the message does not run here, ErrCancelInline for
// an inline handler.
func (w *Worker) Cancel(queue, id, by string, then CancelThen) (TaskState, error) {
	if _, err := ParseCancelThen(string(then)); err != nil {
		return TaskState{}, err
	}
	if by == "" {
		by = "unknown"
	}
	l := w.loop(queue)
	if l == nil {
		return TaskState{}, ErrNotRunningHere
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.inflight[id]
	switch {
	case !ok:
		return TaskState{}, ErrNotRunningHere
	case t.cancel == nil:
		return TaskState{}, ErrCancelInline
	}
	if t.CancelledBy == "" {
		t.CancelledBy, t.then = by, then
		close(t.cancel)
		l.logger().Warn("task cancelled by an operator: stopping it", "id", id, "by", by, "then", string(then), "pid", t.PID)
	}
	return t.asOf(w.cfg.Clock.Now()), nil
}

// cancelRequest is who cancelled an attempt and what follows, read by the
// runner after the executor reported OutcomeCancelled.
type cancelRequest struct {
	by   string
	then CancelThen
}

// cancelOf returns the cancel request of ts (after the attempt ended).
func (l *queueLoop) cancelOf(ts *TaskState) cancelRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cancelRequest{by: ts.CancelledBy, then: ts.then}
}

// resolve returns what follows a cancel on a queue configured as cfg:
// CancelDead, CancelRetry or CancelPark (only when the queue parks and a
// Pauser is configured).
func (c cancelRequest) resolve(cfg *drover.QueueConfig, canPark bool) CancelThen {
	parks := cfg.Parks() && canPark
	switch c.then {
	case CancelRetry:
		return CancelRetry
	case CancelDefault, CancelPark:
		if parks {
			return CancelPark
		}
	}
	return CancelDead
}

// failure is the record of the cancelled attempt.
func (c cancelRequest) failure(f drover.Failure, then CancelThen) drover.Failure {
	what := map[CancelThen]string{CancelDead: "dead-lettered", CancelRetry: "retried", CancelPark: "queue parked"}[then]
	f.Reason = fmt.Sprintf("cancelled by %s (%s): %s", c.by, what, strings.TrimPrefix(f.Reason, "cancelled: "))
	f.CancelledBy = c.by
	return f
}

// serveCancel answers POST /debug/cancel?queue=&id=&by=&then=: 200 with the
// task's JobState (CancelledBy set) once it is being stopped, 404 when the
// message does not run here, 409 for an inline handler, 400 for a missing
// or bad parameter.
func (w *Worker) serveCancel(rw http.ResponseWriter, r *http.Request) {
	p := r.URL.Query()
	q, id := p.Get("queue"), p.Get("id")
	if q == "" || id == "" {
		http.Error(rw, "want ?queue=<queue>&id=<id>[&by=<who>][&then=retry|dead|park]", http.StatusBadRequest)
		return
	}
	then, err := ParseCancelThen(p.Get("then"))
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	ts, err := w.Cancel(q, id, p.Get("by"), then)
	switch {
	case errors.Is(err, ErrNotRunningHere):
		http.Error(rw, "not running here", http.StatusNotFound)
		return
	case errors.Is(err, ErrCancelInline):
		http.Error(rw, err.Error(), http.StatusConflict)
		return
	case err != nil:
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(JobState{Member: w.cfg.Member, Queue: q, Task: ts})
}
