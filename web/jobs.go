package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/defaults"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/jobs"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/queue"
)

// DefaultMaxBatch is the most jobs one POST …/jobs may carry.
const DefaultMaxBatch = 1000

// JobsConfig wires the job endpoints (RouteJobs): status by id, and HTTP
// producers (docs/http-api.md).
type JobsConfig struct {
	// Store enqueues and revokes. Required.
	Store *queue.Store
	// Lookup answers status lookups. Required.
	Lookup *jobs.Lookup
	// Queues finds a queue's configuration, its own or its family's, for
	// the fleet's one "does this queue exist" rule (ops.KnownQueue) and a
	// revoke's outcome policy. Required.
	Queues ops.QueueConfigs
	// MaxBatch bounds the jobs of one request; default 1000.
	MaxBatch int
}

// RouteJobs registers the job endpoints and the queue page's job lookup:
//
//	GET    /api/v1/queues/{queue}/jobs/{id}   any role: the job's status
//	POST   /api/v1/queues/{queue}/jobs        producer: enqueue one or a batch
//	DELETE /api/v1/queues/{queue}/jobs/{id}   producer: revoke a delayed job
func (s *Server) RouteJobs(cfg JobsConfig) error {
	if cfg.Store == nil || cfg.Lookup == nil || cfg.Queues == nil {
		return fmt.Errorf("%w: web.JobsConfig: Store, Lookup and Queues are required", drover.ErrInvalidConfig)
	}
	cfg.MaxBatch = defaults.Positive(cfg.MaxBatch, DefaultMaxBatch)
	s.jobs = &cfg
	// These answer from Redis (and ZooKeeper when there is a session):
	// served before the console's first session too (Config.Ops).
	s.handleAPI("GET", "/queues/{queue}/jobs/{id}", auth.RoleNone, func(r *Request) (any, error) {
		q := r.PathValue("queue")
		if err := drover.ValidateQueueName(q); err != nil {
			return nil, Errorf(http.StatusBadRequest, "queue name: %v", err)
		}
		return cfg.Lookup.Job(r.Context(), q, r.PathValue("id"))
	}, true)
	s.handleProducer("POST", "/queues/{queue}/jobs", auth.Producer, "job.enqueue", func(r *Request) (any, error) {
		return s.enqueueJobs(r, &cfg)
	})
	s.handleProducer("DELETE", "/queues/{queue}/jobs/{id}", auth.Producer, "job.revoke", func(r *Request) (any, error) {
		q, id := r.PathValue("queue"), r.PathValue("id")
		qc, err := queueConfig(r.Context(), &cfg, q)
		if err != nil {
			return nil, err
		}
		ok, err := cfg.Store.Operator().RevokeRecording(r.Context(), q, id, qc.Outcomes, r.Principal.Name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, Errorf(http.StatusNotFound, "job %s of %s is not delayed (unknown, already due, or revoked)", id, q)
		}
		return map[string]any{"queue": q, "id": id, "revoked": true}, nil
	})
	return nil
}

// queueConfig returns the configuration of q, a queue that exists by the
// fleet's rule (ops.KnownQueue; 404 otherwise, so that a typo does not
// create a stray queue): its own or its family's, zero (with its name)
// for a queue enqueued to that has none.
func queueConfig(ctx context.Context, cfg *JobsConfig, q string) (drover.QueueConfig, error) {
	if err := enqueueable(ctx, cfg, q); err != nil {
		return drover.QueueConfig{}, err
	}
	qe, err := cfg.Queues.GetOrFamily(ctx, q)
	switch {
	case err == nil:
		return qe.Config, nil
	case errors.Is(err, drover.ErrQueueNotFound):
		return drover.QueueConfig{Name: q}, nil
	}
	return drover.QueueConfig{}, err
}

// enqueueable checks that q exists by the fleet's one rule
// (ops.KnownQueue): one SISMEMBER for a queue enqueued to before (no
// ZooKeeper read, so enqueues go on while ZooKeeper is away), else its
// configuration or its family's in ZooKeeper; 404 for neither.
func enqueueable(ctx context.Context, cfg *JobsConfig, q string) error {
	return ops.KnownQueue(ctx, cfg.Store.Inspector(), cfg.Queues, q)
}

// JobRequest is one job in a POST …/jobs body.
type JobRequest struct {
	ID          string            `json:"id,omitempty"` // caller-chosen: an idempotency key
	Task        string            `json:"task"`
	Args        json.RawMessage   `json:"args,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	MaxAttempts int               `json:"max_attempts,omitempty"`
	In          string            `json:"in,omitempty"` // a Go duration: run this much later
	At          string            `json:"at,omitempty"` // RFC 3339: run at this time
}

// JobResult is what an enqueue did with one job.
type JobResult struct {
	ID        string          `json:"id"`
	Queue     string          `json:"queue"`
	Position  drover.Position `json:"position,omitempty"`
	Delayed   bool            `json:"delayed,omitempty"`
	DueAt     *time.Time      `json:"due_at,omitempty"`
	Duplicate bool            `json:"duplicate,omitempty"`
}

// enqueueJobs reads one job ({"task": …}) or a batch ({"jobs": […]}),
// validates every job, then enqueues them in one script call: all or none.
func (s *Server) enqueueJobs(r *Request, cfg *JobsConfig) (any, error) {
	q := r.PathValue("queue")
	if err := drover.ValidateQueueName(q); err != nil {
		return nil, Errorf(http.StatusBadRequest, "queue name: %v", err)
	}
	// One strict decode: a job's fields, or "jobs" alone for a batch.
	var body struct {
		JobRequest
		Jobs *[]JobRequest `json:"jobs"`
	}
	if err := strictJSON(r.Body, &body); err != nil {
		return nil, Errorf(http.StatusBadRequest, "request body: want a job or {\"jobs\": [...]}: %v", err)
	}
	batch := body.Jobs != nil
	reqs := []JobRequest{body.JobRequest}
	if batch {
		if !reflect.ValueOf(body.JobRequest).IsZero() {
			return nil, Errorf(http.StatusBadRequest, "request body: a batch holds only \"jobs\"")
		}
		reqs = *body.Jobs
	}
	switch {
	case len(reqs) == 0:
		return nil, Errorf(http.StatusBadRequest, "request body: the batch has no jobs")
	case len(reqs) > cfg.MaxBatch:
		return nil, Errorf(http.StatusRequestEntityTooLarge, "request body: a batch of %d jobs, at most %d per request", len(reqs), cfg.MaxBatch)
	}
	now := time.Now()
	msgs := make([]*drover.Message, len(reqs))
	at := make([]time.Time, len(reqs))
	for i, jr := range reqs {
		m, due, err := jr.message(q, now)
		if err != nil {
			if batch {
				return nil, Errorf(http.StatusBadRequest, "jobs[%d]: %v", i, err)
			}
			return nil, Errorf(http.StatusBadRequest, "%v", err)
		}
		if m.ID == "" {
			// The id is given before the first write, so that a client
			// can retry an outcome it does not know without a second copy.
			if m.ID, err = cfg.Store.NewID(); err != nil {
				return nil, err
			}
		}
		msgs[i], at[i] = m, due
	}
	// From here on every 5xx carries the ids: the client's retry with them
	// is safe whatever happened.
	res, err := s.enqueueAdmitted(r, cfg, q, msgs, at)
	if err != nil && statusOf(err) < 500 { // an unknown queue (404), a full family (409): nothing was written
		if errors.Is(err, drover.ErrFamilyFull) {
			err = &httpError{status: http.StatusConflict, msg: err.Error()}
		}
		return nil, err
	}
	if errors.Is(err, drover.ErrOutcomeUnknown) {
		// Redis answered, but did not confirm the write as replicated
		// (redis.durable): a failover now could lose it. 503: retry.
		err = &httpError{status: http.StatusServiceUnavailable, msg: err.Error()}
	}
	if err != nil {
		return nil, unknownOutcome(s.explain(r.Request, err), msgs, batch)
	}
	out := make([]JobResult, len(res))
	created := 0
	for i, er := range res {
		out[i] = JobResult{ID: er.ID, Queue: q, Position: er.Position, Duplicate: er.Duplicate}
		if !er.Duplicate {
			created++
			if er.Position == 0 {
				d := at[i].UTC()
				out[i].Delayed, out[i].DueAt = true, &d
			}
		}
	}
	var v any = out[0]
	if batch {
		v = map[string]any{"jobs": out}
	}
	if created > 0 {
		s.cfg.Metrics.IncrCounter(metrics.EnqueuedTotal, float32(created), metrics.L("queue", q))
		return Created{Value: v}, nil
	}
	return v, nil
}

// enqueueAdmitted enqueues msgs to q if q exists by the fleet's one rule
// (ops.KnownQueue), in one command for a queue Redis's registry lists: the
// registry's check is inside the enqueue script (queue.EnqueueAdmitted),
// with no ZooKeeper read, so enqueues go on while ZooKeeper is away. Only
// for a queue the registry does not list is ZooKeeper asked
// (ops.ProducerAdmission: its configuration, or its family's, whose
// max_queues may refuse it), and the enqueue sent again under that
// admission. An unknown queue is a 404 and a full family a
// drover.FamilyFullError; nothing was written for either.
func (s *Server) enqueueAdmitted(r *Request, cfg *JobsConfig, q string, msgs []*drover.Message, at []time.Time) ([]queue.EnqueueResult, error) {
	p := cfg.Store.Producer()
	res, err := p.EnqueueAdmitted(r.Context(), msgs, at, queue.Admission{})
	if !errors.Is(err, queue.ErrNotRegistered) {
		return res, err
	}
	adm, err := ops.ProducerAdmission(r.Context(), cfg.Queues, q)
	if err != nil {
		return nil, err
	}
	return p.EnqueueAdmitted(r.Context(), msgs, at, adm)
}

// message checks one job against the envelope rules (docs/redis-schema.md)
// and returns its message and due time (zero: now).
func (jr JobRequest) message(q string, now time.Time) (*drover.Message, time.Time, error) {
	var due time.Time
	switch {
	case jr.Task == "":
		return nil, due, errors.New("task is required")
	case queue.CheckID(jr.ID) != nil:
		return nil, due, fmt.Errorf("id %w", queue.CheckID(jr.ID))
	case jr.MaxAttempts < 0:
		return nil, due, fmt.Errorf("max_attempts %d: want ≥ 0", jr.MaxAttempts)
	case jr.In != "" && jr.At != "":
		return nil, due, errors.New("in and at are exclusive")
	case len(jr.Args) > 0 && !json.Valid(jr.Args):
		return nil, due, errors.New("args: not JSON")
	}
	if jr.In != "" {
		d, err := time.ParseDuration(jr.In)
		if err != nil || d < 0 {
			return nil, due, fmt.Errorf("in %q: want a duration ≥ 0 like 30s or 2h", jr.In)
		}
		if d > 0 {
			due = now.Add(d)
		}
	}
	if jr.At != "" {
		t, err := time.Parse(time.RFC3339Nano, jr.At)
		if err != nil {
			return nil, due, fmt.Errorf("at %q: want RFC 3339 like 2030-01-02T15:04:05Z", jr.At)
		}
		due = t
	}
	return &drover.Message{ID: jr.ID, Queue: q, Task: jr.Task, Args: jr.Args, Headers: jr.Headers, MaxAttempts: jr.MaxAttempts}, due, nil
}

// strictJSON decodes one JSON value refusing unknown fields and trailing
// data, so that a misspelt field is an error, not a silently different job.
func strictJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// unknownOutcome is the answer to an enqueue whose write failed: the jobs
// may or may not be in, so the answer is a 5xx (503 when a backing
// service did not answer) that carries the ids the jobs were given; a
// retry with the same ids is safe: a job already in is answered
// "duplicate" and not written again.
func unknownOutcome(err error, msgs []*drover.Message, batch bool) error {
	status := http.StatusInternalServerError
	var he *httpError
	if errors.As(err, &he) {
		status = he.status
	}
	if status < 500 {
		return err
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	extra := map[string]any{"outcome": "unknown", "ids": ids}
	if !batch {
		extra["id"] = ids[0]
	}
	return &httpError{status: status, extra: extra,
		msg: fmt.Sprintf("outcome unknown: the jobs may or may not be in; send the same request again with these ids (safe: a job already in is answered duplicate): %v", err)}
}
