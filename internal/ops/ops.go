// Package ops holds the operations an operator performs on a fleet —
// reading its state, pausing, revoking, retrying, resetting offsets,
// managing schedules — over ZooKeeper (package coordinator) and Redis
// (package queue), so that the web console's API and `drover ctl` share one
// implementation. Every function is safe for concurrent use; none keeps
// state between calls except Fleet's snapshot cache.
package ops

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/scheduler"
)

// Errors that callers map to answers (HTTP status codes, exit codes).
var (
	// ErrBadInput: a parameter is missing or malformed (400).
	ErrBadInput = errors.New("bad input")
	// ErrRefused: the fleet's state forbids the operation now (409): an
	// owned, unpaused queue's offset, a dead letter pending again.
	ErrRefused = errors.New("refused")
	// ErrUnreachable: a member's admin endpoint did not answer (502).
	ErrUnreachable = errors.New("unreachable")
)

// badInput returns an error wrapping ErrBadInput.
func badInput(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadInput, fmt.Sprintf(format, a...))
}

// Config configures Ops.
type Config struct {
	// ZK and Store are the fleet's coordination session and queue store.
	// Required.
	ZK    *coordinator.Session
	Store *queue.Store
	// Cluster names the fleet, for display.
	Cluster string
	// MemberToken is sent as a bearer token to members' debug endpoints
	// (/debug/state) by MemberState. Optional.
	MemberToken string
	// HTTP fetches members' state. Default: a client with a 5 s timeout.
	HTTP *http.Client
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Ops performs operations on one fleet.
type Ops struct {
	zk      *coordinator.Session
	store   *queue.Store
	sched   *scheduler.Manager
	cluster string
	token   string
	http    *http.Client
	now     func() time.Time
	matched atomic.Int64 // names matched by patterns (NamesMatched)
}

// New validates cfg and returns Ops.
func New(cfg Config) (*Ops, error) {
	if cfg.ZK == nil || cfg.Store == nil {
		return nil, fmt.Errorf("%w: ops: ZK and Store are required", drover.ErrInvalidConfig)
	}
	o := &Ops{zk: cfg.ZK, store: cfg.Store, sched: scheduler.NewManager(cfg.Store.Schedules()),
		cluster: cfg.Cluster, token: cfg.MemberToken, http: cfg.HTTP, now: cfg.Now}
	if o.http == nil {
		o.http = &http.Client{Timeout: 5 * time.Second}
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o, nil
}

// Store returns the queue store (for features built on top of ops).
func (o *Ops) Store() *queue.Store { return o.store }

// ZK returns the coordination session.
func (o *Ops) ZK() *coordinator.Session { return o.zk }

// IsNotFound reports whether err means "no such queue, message, member or
// schedule".
func IsNotFound(err error) bool {
	return errors.Is(err, drover.ErrNotFound) || errors.Is(err, drover.ErrQueueNotFound)
}

// IsBadInput reports whether err is the caller's mistake.
func IsBadInput(err error) bool {
	return errors.Is(err, ErrBadInput) || errors.Is(err, drover.ErrInvalidConfig) || errors.Is(err, drover.ErrInvalidQueueName) || errors.Is(err, drover.ErrInvalidText)
}

// IsRefused reports whether the fleet's state refused the operation.
func IsRefused(err error) bool {
	return errors.Is(err, ErrRefused) || errors.Is(err, coordinator.ErrQueueOwned) || errors.Is(err, coordinator.ErrConflict) || errors.Is(err, coordinator.ErrQueueExists)
}

// StatusOf is the HTTP status that answers an operation ending in err:
// 200 for nil, then 404, 400, 409 and 502 for the errors above, 500 for
// the rest. The console answers with it and both the console and `drover
// ctl` record it in the audit log.
func StatusOf(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case IsNotFound(err):
		return http.StatusNotFound
	case IsBadInput(err):
		return http.StatusBadRequest
	case IsRefused(err):
		return http.StatusConflict
	case errors.Is(err, ErrUnreachable):
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// mapSlice returns f of every element of in, in order. The result is never
// nil, so that an empty list is [] in JSON, not null.
func mapSlice[T, R any](in []T, f func(T) R) []R {
	out := make([]R, 0, len(in))
	for _, v := range in {
		out = append(out, f(v))
	}
	return out
}
