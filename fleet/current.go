package fleet

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/worker"
)

// Current is a member's current session as the member's worker uses it:
// to prove it alive after a freeze (Confirm), to renew the task lease
// (Contact, for LeaseRenewer) and to park an ordered queue (SetPause). It
// breaks the cycle between the two: the process builds it first, gives it
// to the worker's config and to the member's (MemberConfig.Current), and
// the member sets it at the start and end of each session. Its zero value
// holds no session. Safe for concurrent use.
type Current struct{ p atomic.Pointer[liveSession] }

var _ worker.Pauser = (*Current)(nil)

// liveSession holds a session for atomic loads.
type liveSession struct{ MemberSession }

// set makes s the current session; nil: between sessions.
func (c *Current) set(s MemberSession) {
	if s == nil {
		c.p.Store(nil)
		return
	}
	c.p.Store(&liveSession{s})
}

// session returns the current session, or nil between sessions.
func (c *Current) session() MemberSession {
	if l := c.p.Load(); l != nil {
		return l.MemberSession
	}
	return nil
}

// errNoSession is the error of a call made between sessions.
var errNoSession = errors.New("no ZooKeeper session")

// Confirm proves the current session alive with a fresh round trip (the
// worker's freeze guard: worker.Config.Confirm). Between sessions it fails.
func (c *Current) Confirm(ctx context.Context) error {
	s := c.session()
	if s == nil {
		return errNoSession
	}
	return s.Confirm(ctx)
}

// Contact returns the current session's Contact, or nil between sessions
// (LeaseRenewerConfig.Session).
func (c *Current) Contact() Contact {
	if s := c.session(); s != nil {
		return s
	}
	return nil // not a Contact holding a nil MemberSession
}

// SetPause writes a pause flag through the current session (an ordered
// queue parking itself at a failed head: worker.Config.Pauser). Between
// sessions it fails.
func (c *Current) SetPause(ctx context.Context, scope drover.PauseScope, name string, p drover.Pause) error {
	s := c.session()
	if s == nil {
		return errNoSession
	}
	return s.Pauses().Set(ctx, scope, name, p)
}
