package executor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// lazyDeadline is an inline handler's context when its task has a
// deadline: context.WithDeadline(parent, deadline), made on the first call
// that needs it. A handler that never looks at its context (most do
// their work and return) then costs no timer, no child registered with
// the task's context and no cancel: the three allocations and two timer
// heap operations of context.WithTimeout were 8% of the worker's CPU per
// inline task (docs/decisions.md, "Issue 43: a task's CPU in the worker").
//
// Deadline answers from its fields, as context.WithDeadline's context
// would (the parent's deadline when it is earlier); Done, Err and Value
// make the real context first and answer from it, so everything else
// (cancellation by the parent, context.Cause, a context derived from this
// one, which asks for Done) is the standard library's own. The deadline is
// absolute, fixed when the handler starts, so making the context late
// moves nothing: a context made after the deadline is done at once.
type lazyDeadline struct {
	parent   context.Context
	deadline time.Time

	made     atomic.Bool // ctx and cancel are set
	mu       sync.Mutex
	ctx      context.Context // the real context, once made
	cancel   context.CancelFunc
	released bool // the task ended: a real context made now is cancelled
}

// newLazyDeadline returns the context; the caller releases it when the
// handler has returned.
func newLazyDeadline(parent context.Context, deadline time.Time) *lazyDeadline {
	return &lazyDeadline{parent: parent, deadline: deadline}
}

// real returns the real context, making it on the first call.
func (c *lazyDeadline) real() context.Context {
	if c.made.Load() {
		return c.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.released {
			c.cancel()
		}
		c.made.Store(true)
	}
	return c.ctx
}

// release ends the context as the cancel of context.WithDeadline does:
// the real context, if made, is cancelled; if not, a goroutine of the
// handler's that looks at the context later finds it cancelled (made
// cancelled), not running until the deadline.
func (c *lazyDeadline) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = true
	if c.cancel != nil {
		c.cancel()
	}
}

// Deadline implements context.Context without making the real context.
func (c *lazyDeadline) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done implements context.Context.
func (c *lazyDeadline) Done() <-chan struct{} { return c.real().Done() }

// Err implements context.Context.
func (c *lazyDeadline) Err() error { return c.real().Err() }

// Value implements context.Context.
func (c *lazyDeadline) Value(key any) any { return c.real().Value(key) }

// String names the context as context.WithDeadline's does, for a handler
// that prints it.
func (c *lazyDeadline) String() string {
	return "executor.lazyDeadline(" + c.deadline.String() + ")"
}
