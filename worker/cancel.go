package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
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

// AuditEntry is one audit record written by the admin server: the fields
// of the console's (package internal/ops's AuditRecord), so that a cancel
// through either reads the same in the audit log.
type AuditEntry struct {
	At     time.Time
	Who    string
	Role   string
	Via    string
	Remote string
	Action string
	Target string
	Detail string
	Result string
	Status int
}

// auditTimeout bounds the write of a cancel's audit record.
const auditTimeout = 2 * time.Second

// serveCancel answers POST /debug/cancel?queue=&id=&then=: 200 with the
// task's JobState (CancelledBy set) once it is being stopped, 404 when the
// message does not run here, 409 for an inline handler, 400 for a missing
// or bad parameter.
//
// The canceller is the principal the guard authenticated (the token's
// name; "local" for a loopback client of a guard without tokens), never a
// parameter: a by= parameter (the console and ctl send who asked them) is
// kept in the audit record's detail as what the caller claimed, and
// changes nothing else. Every answer but a 400 is written to the audit log
// as job.cancel through audit (nil: not audited), as the console's cancel
// is.
func (w *Worker) serveCancel(rw http.ResponseWriter, r *http.Request, audit func(context.Context, AuditEntry) error) {
	p := r.URL.Query()
	q, id := p.Get("queue"), p.Get("id")
	if q == "" || id == "" {
		http.Error(rw, "want ?queue=<queue>&id=<id>[&then=retry|dead|park]", http.StatusBadRequest)
		return
	}
	then, err := ParseCancelThen(p.Get("then"))
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	who, ok := auth.FromContext(r.Context())
	if !ok || who.Name == "" {
		who = auth.Principal{Name: "local", Role: auth.Admin, Via: "loopback"} // loopbackOnly: no guard that names anyone
	}
	rec := AuditEntry{At: w.cfg.Clock.Now().UTC(), Who: who.Name, Role: who.Role.String(), Via: "admin " + who.Via, Remote: r.RemoteAddr,
		Action: "job.cancel", Target: "/queues/" + q + "/running/" + id + "/cancel", Detail: "member=" + w.cfg.Member + " then=" + string(then)}
	if by := p.Get("by"); by != "" && by != who.Name {
		rec.Detail += " for=" + by + " (as the caller says)"
	}
	ts, err := w.Cancel(q, id, who.Name, then)
	status := http.StatusOK
	switch {
	case errors.Is(err, ErrNotRunningHere):
		status = http.StatusNotFound
	case errors.Is(err, ErrCancelInline):
		status = http.StatusConflict
	case err != nil:
		status = http.StatusInternalServerError
	}
	rec.Status, rec.Result = status, "ok"
	if err != nil {
		rec.Result = err.Error()
	}
	if audit != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditTimeout)
		if aerr := audit(ctx, rec); aerr != nil {
			w.cfg.Logger.Error("audit record of a cancel not written", "queue", q, "id", id, "who", who.Name, "error", aerr)
		}
		cancel()
	}
	switch {
	case errors.Is(err, ErrNotRunningHere):
		http.Error(rw, "not running here", http.StatusNotFound)
		return
	case err != nil:
		http.Error(rw, err.Error(), status)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(JobState{Member: w.cfg.Member, Queue: q, Task: ts})
}
