// Package ops holds the operations an operator performs on a fleet —
// reading its state, pausing, revoking, retrying, resetting offsets,
// managing schedules — over ZooKeeper (package coordinator) and Redis
// (package queue), so that the web console's API and `drover ctl` share one
// implementation. Ops gives one small type per role (Queues, Messages,
// Jobs, Members, AuditLog, Schedules, Families, Find); KnownQueue is the
// fleet's one answer to "does this queue exist". Every function is safe for
// concurrent use; none keeps state between calls but a count of the names
// patterns were matched against (Find.NamesMatched).
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

// Ops performs operations on one fleet. It holds no operation itself:
// each role is a small type reached through one accessor (Queues,
// Messages, Jobs, Members, Audit, Schedules, Families, Find), so that a
// caller names the role it needs (docs/decisions.md, "Issue 42: ops by
// role"). The roles share one connection to the fleet and one clock.
type Ops struct{ c *core }

// core is what every role works with: the fleet's session and store, the
// clock, and the helpers more than one role uses. Its methods are
// unexported, so that embedding it adds nothing to a role's API.
type core struct {
	zk      *coordinator.Session
	store   *queue.Store
	sched   *scheduler.Manager
	cluster string
	token   string
	http    *http.Client
	now     func() time.Time
	matched atomic.Int64 // names matched by patterns (Find.NamesMatched)
}

// New validates cfg and returns Ops.
func New(cfg Config) (*Ops, error) {
	if cfg.ZK == nil || cfg.Store == nil {
		return nil, fmt.Errorf("%w: ops: ZK and Store are required", drover.ErrInvalidConfig)
	}
	c := &core{zk: cfg.ZK, store: cfg.Store, sched: scheduler.NewManager(cfg.Store.Schedules()),
		cluster: cfg.Cluster, token: cfg.MemberToken, http: cfg.HTTP, now: cfg.Now}
	if c.http == nil {
		c.http = &http.Client{Timeout: 5 * time.Second}
	}
	if c.now == nil {
		c.now = time.Now
	}
	return &Ops{c: c}, nil
}

// Queues is queue administration: existence, detail, listing,
// configuration, pause and resume, offset resets.
type Queues struct{ *core }

// Messages reads a queue's messages and acts on one: delayed (revoke, run
// now) and dead (retry, purge).
type Messages struct{ *core }

// Jobs acts on running and parked jobs: cancel, and a parked queue's head
// (retry, skip).
type Jobs struct{ *core }

// Members reads the fleet's members: the snapshot, one member's state,
// the running view and its task counts.
type Members struct{ *core }

// AuditLog writes and reads the fleet's audit log and refusal stream.
type AuditLog struct{ *core }

// Schedules manages the scheduler's entries.
type Schedules struct{ *core }

// Families manages queue families (drover.FamilyConfig).
type Families struct{ *core }

// Find selects queues by prefix or pattern and acts on a selection in
// bulk.
type Find struct{ *core }

// Queues returns the queue administration role.
func (o *Ops) Queues() Queues { return Queues{o.c} }

// Messages returns the messages role.
func (o *Ops) Messages() Messages { return Messages{o.c} }

// Jobs returns the running and parked jobs role.
func (o *Ops) Jobs() Jobs { return Jobs{o.c} }

// Members returns the members and running view role.
func (o *Ops) Members() Members { return Members{o.c} }

// Audit returns the audit log role.
func (o *Ops) Audit() AuditLog { return AuditLog{o.c} }

// Schedules returns the schedules role.
func (o *Ops) Schedules() Schedules { return Schedules{o.c} }

// Families returns the families role.
func (o *Ops) Families() Families { return Families{o.c} }

// Find returns the find and bulk role.
func (o *Ops) Find() Find { return Find{o.c} }

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
	return errors.Is(err, ErrRefused) || errors.Is(err, drover.ErrFamilyFull) || errors.Is(err, coordinator.ErrQueueOwned) || errors.Is(err, coordinator.ErrConflict) || errors.Is(err, coordinator.ErrQueueExists)
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
