// Package jobs answers "where is my job?": a job's status by id, combining
// what Redis knows (delayed, pending, retrying, dead, outcome records) with
// the queue owner's live state (running, with pid and start time).
//
// Running is deliberately not written anywhere: it changes twice per task,
// and writing it would cost a round trip per task on the hot path. The
// owner already holds it in memory (its in-flight map), so a lookup asks the
// owner's admin server (/debug/job, one map lookup) only when Redis says the
// job is pending. Lookups are rare; tasks are not.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/drover-dev/drover"
)

// Store reads a job's status from Redis (*queue.Store).
type Store interface {
	JobStatus(ctx context.Context, queue, id string, offset drover.Position) (drover.JobStatus, error)
}

// Owner is who runs a queue now and how far it has committed.
type Owner struct {
	Member    string          // "" when the queue is not owned
	AdminAddr string          // the owner's admin server; "" when unknown or off
	Offset    drover.Position // the committed offset; 0 when never committed
}

// Fleet reads a queue's owner and committed offset, and its pause flag
// (ZooKeeper; see SessionFleet).
type Fleet interface {
	QueueOwner(ctx context.Context, queue string) (Owner, error)
	// QueuePause returns the queue's own pause flag, nil when the queue
	// is not paused by one (everything and member flags do not count).
	QueuePause(ctx context.Context, queue string) (*drover.Pause, error)
}

// Lookup answers status lookups. Store is required; without Fleet, pending
// positions count from the start of the log and running is never reported.
type Lookup struct {
	Store Store
	Fleet Fleet
	// HTTP asks owners' admin servers; default: a client with a 5s timeout.
	HTTP *http.Client
	// Token, when set, is sent as a bearer token to the owners' debug
	// endpoints (an operator token: ctl.token).
	Token string
}

// adminTimeout bounds one question to an owner's admin server.
const adminTimeout = 5 * time.Second

// Job returns the status of job id in queue. It fails only when Redis or
// ZooKeeper cannot be read; an owner that does not answer leaves the answer
// at pending with a Note.
func (l *Lookup) Job(ctx context.Context, queue, id string) (drover.JobStatus, error) {
	var owner Owner
	if l.Fleet != nil {
		o, err := l.Fleet.QueueOwner(ctx, queue)
		if err != nil {
			return drover.JobStatus{}, fmt.Errorf("job %s of %s: %w", id, queue, err)
		}
		owner = o
	}
	st, err := l.Store.JobStatus(ctx, queue, id, owner.Offset)
	if err != nil {
		return drover.JobStatus{}, err
	}
	if st.State != drover.JobPending {
		return st, nil
	}
	if l.Fleet != nil {
		// A parked head is pending in Redis; its queue's pause flag
		// names it. The owner holds it: it is not running.
		p, err := l.Fleet.QueuePause(ctx, queue)
		if err != nil {
			return drover.JobStatus{}, fmt.Errorf("job %s of %s: %w", id, queue, err)
		}
		if p != nil && p.Head != nil && p.Head.ID == id {
			parked(&st, *p)
			return st, nil
		}
	}
	if owner.Member == "" {
		return st, nil
	}
	if owner.AdminAddr == "" {
		st.Note = fmt.Sprintf("owner %s has no admin address: cannot tell whether it runs now", owner.Member)
		return st, nil
	}
	run, ok, err := l.askOwner(ctx, owner.AdminAddr, queue, id)
	switch {
	case err != nil:
		st.Note = fmt.Sprintf("owner %s did not answer (%v): cannot tell whether it runs now", owner.Member, err)
	case ok:
		started := run.Task.Started.UTC()
		st.State, st.Member, st.PID, st.StartedAt, st.Attempt = drover.JobRunning, run.Member, run.Task.PID, &started, run.Task.Attempt
		if st.Task == "" {
			st.Task = run.Task.Task
		}
		st.Ahead = nil
	}
	return st, nil
}

// parked makes st, a pending message, the head its queue is parked at
// under p: its attempts, last error and who cancelled it come from the
// head's record in the flag.
func parked(st *drover.JobStatus, p drover.Pause) {
	h := *p.Head
	st.State, st.Parked, st.Ahead = drover.JobParked, &p, nil
	if h.Task != "" {
		st.Task = h.Task
	}
	st.Attempt = max(h.Attempts-1, 0) // the last attempt run, counted from 0
	code := h.ExitCode
	st.Error, st.ExitCode, st.StderrTail = h.Error, &code, ""
	st.By = cancelledBy(h.Error)
}

// cancelledBy returns who cancelled the attempt that parked a head, read
// from its failure, which the owner writes as "cancelled by <who> (queue
// parked): …" (worker.cancelRequest.failure); "" for a head that parked
// because it used its attempts.
func cancelledBy(reason string) string {
	rest, ok := strings.CutPrefix(reason, "cancelled by ")
	if !ok {
		return ""
	}
	who, _, ok := strings.Cut(rest, " (")
	if !ok {
		return ""
	}
	return who
}

// running is the owner's /debug/job answer (worker.JobState).
type running struct {
	Member string `json:"member"`
	Task   struct {
		Task    string    `json:"task"`
		Attempt int       `json:"attempt"`
		PID     int       `json:"pid"`
		Started time.Time `json:"started"`
		// CancelledBy: the /debug/cancel answer (cancel.go).
		CancelledBy string `json:"cancelled_by"`
	} `json:"task"`
}

// askOwner asks the owner's admin server whether it runs the job now.
func (l *Lookup) askOwner(ctx context.Context, addr, queue, id string) (running, bool, error) {
	u := "http://" + addr + "/debug/job?" + url.Values{"queue": {queue}, "id": {id}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return running{}, false, err
	}
	resp, body, err := l.ask(req)
	if err != nil {
		return running{}, false, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return running{}, false, nil
	default:
		return running{}, false, fmt.Errorf("GET /debug/job: %s", resp.Status)
	}
	var r running
	if err := json.Unmarshal(body, &r); err != nil {
		return running{}, false, errors.New("GET /debug/job: answer is not JSON")
	}
	return r, true, nil
}

// ask sends req to an owner's admin server, with the lookup's token, and
// returns the answer with its body (up to 1 MiB, already read and closed).
func (l *Lookup) ask(req *http.Request) (*http.Response, []byte, error) {
	client := l.HTTP
	if client == nil {
		client = &http.Client{Timeout: adminTimeout}
	}
	if l.Token != "" {
		req.Header.Set("Authorization", "Bearer "+l.Token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, nil, err
	}
	return resp, body, nil
}
