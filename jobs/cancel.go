package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/drover-dev/drover"
)

// Cancelling a running task goes where its status lookup goes: to the
// queue's owner, found in ZooKeeper, whose admin server stops the task
// (POST /debug/cancel; docs/semantics.md, "Cancelling a running task").

// Cancelled is the owner's answer to a cancel: the task it is stopping.
type Cancelled struct {
	Queue       string    `json:"queue"`
	ID          string    `json:"id"`
	Member      string    `json:"member"`
	Task        string    `json:"task"`
	Attempt     int       `json:"attempt"`
	PID         int       `json:"pid"`
	Started     time.Time `json:"started"`
	CancelledBy string    `json:"cancelled_by"`
	// Then is what follows once it stopped: "dead", "retry", "park", or
	// "" for the queue's default (dead, or park on a parking queue).
	Then string `json:"then"`
}

// NotRunningError says that a message to cancel does not run now, and
// where it is instead.
type NotRunningError struct {
	Status drover.JobStatus
}

func (e *NotRunningError) Error() string {
	st := e.Status
	where := string(st.State)
	switch st.State {
	case drover.JobPending:
		where = fmt.Sprintf("it is pending at position %d", st.Position)
		if st.Ahead != nil {
			where += fmt.Sprintf(" (%d ahead of it)", *st.Ahead)
		}
	case drover.JobDelayed, drover.JobRetrying:
		where = "it is " + string(st.State)
		if st.DueAt != nil {
			where += " until " + st.DueAt.Format(time.RFC3339)
		}
	case drover.JobParked:
		where = "its queue is parked at it: resolve it with drover ctl parked retry or skip"
	case drover.JobUnknown:
		where = "no such message (never enqueued, or its record expired)"
	default:
		where = "it is finished: " + string(st.State)
	}
	if st.Note != "" {
		where += "; " + st.Note
	}
	return fmt.Sprintf("job %s of %s is not running; %s", st.ID, st.Queue, where)
}

// ErrCannotCancel: the owner refuses (an inline handler, which cannot be
// killed).
var ErrCannotCancel = errors.New("cannot cancel")

// Cancel asks the owner of queue to stop the running attempt of message id,
// on behalf of by; then is "", "dead", "retry" or "park". It returns once
// the owner has begun stopping it (SIGTERM sent), not when it has stopped.
// It fails with a *NotRunningError when the message does not run now,
// ErrCannotCancel (wrapped) when the owner refuses, and another error when
// ZooKeeper, Redis or the owner cannot be reached.
func (l *Lookup) Cancel(ctx context.Context, queue, id, by, then string) (Cancelled, error) {
	notRunning := func() (Cancelled, error) {
		st, err := l.Job(ctx, queue, id)
		if err != nil {
			return Cancelled{}, err
		}
		if st.State == drover.JobRunning { // it started between the two questions
			st.State, st.Note = drover.JobPending, "it started a moment ago: try again"
		}
		return Cancelled{}, &NotRunningError{Status: st}
	}
	if l.Fleet == nil {
		return Cancelled{}, errors.New("cancel: no fleet to find the queue's owner")
	}
	owner, err := l.Fleet.QueueOwner(ctx, queue)
	if err != nil {
		return Cancelled{}, fmt.Errorf("cancel %s of %s: %w", id, queue, err)
	}
	if owner.Member == "" {
		return notRunning()
	}
	if owner.AdminAddr == "" {
		return Cancelled{}, fmt.Errorf("cancel %s of %s: owner %s has no admin address (worker.admin_addr off)", id, queue, owner.Member)
	}
	u := "http://" + owner.AdminAddr + "/debug/cancel?" + url.Values{"queue": {queue}, "id": {id}, "by": {by}, "then": {then}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return Cancelled{}, err
	}
	resp, body, err := l.ask(req)
	if err != nil {
		return Cancelled{}, fmt.Errorf("cancel %s of %s: owner %s: %w", id, queue, owner.Member, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return notRunning()
	case http.StatusConflict:
		return Cancelled{}, fmt.Errorf("%w: %s", ErrCannotCancel, strings.TrimSpace(string(body)))
	default:
		return Cancelled{}, fmt.Errorf("cancel %s of %s: owner %s: POST /debug/cancel: %s: %s", id, queue, owner.Member, resp.Status, strings.TrimSpace(string(body)))
	}
	var r running
	if err := json.Unmarshal(body, &r); err != nil {
		return Cancelled{}, errors.New("POST /debug/cancel: answer is not JSON")
	}
	return Cancelled{Queue: queue, ID: id, Member: r.Member, Task: r.Task.Task, Attempt: r.Task.Attempt, PID: r.Task.PID,
		Started: r.Task.Started, CancelledBy: r.Task.CancelledBy, Then: then}, nil
}
