package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// zkConn is the subset of *zk.Conn the package uses, so that unit tests can
// inject faults (a lost reply, a new session id, a version conflict).
type zkConn interface {
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateProtectedEphemeralSequential(path string, data []byte, acl []zk.ACL) (string, error)
	Delete(path string, version int32) error
	Exists(path string) (bool, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Multi(ops ...any) ([]zk.MultiResponse, error)
	MultiRead(ops ...any) ([]zk.MultiReadResponse, error)
	AddAuth(scheme string, auth []byte) error
	State() zk.State
	SessionID() int64
	Close()
}

var _ zkConn = (*zk.Conn)(nil)

// ErrOutcomeUnknown: a write was sent but its reply was lost (the connection
// closed, or the call's bound or context ended first), and a re-read could not
// settle whether it was applied.
var ErrOutcomeUnknown = errors.New("coordinator: outcome of the write is unknown")

// errTimeout is returned by bounded when the request timeout ends first.
var errTimeout = errors.New("zookeeper call timed out")

// bounded runs f (a ZooKeeper call) and returns its result, or gives up when
// ctx ends, the session's request timeout passes or the session is lost. When
// it gives up, f keeps running in the background and its result is dropped:
// the request may still be applied.
func bounded[T any](ctx context.Context, s *Session, f func(c zkConn) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if err := s.usable(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f(s.conn)
		ch <- result{v, err}
	}()
	timer := time.NewTimer(s.cfg.RequestTimeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		if r.err == nil {
			// A reply under a session other than ours was applied to the
			// new session: never report it as ours.
			if err := s.usable(); err != nil {
				return zero, err
			}
		}
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-timer.C:
		return zero, fmt.Errorf("%w after %s", errTimeout, s.cfg.RequestTimeout)
	case <-s.done:
		return zero, s.Err()
	}
}

// isUnknownOutcome reports whether err leaves a write's outcome unknown.
func isUnknownOutcome(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, errTimeout) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, zk.ErrClosing)
}

// isVersionConflict reports whether err is a failed version check or a
// missing node in a conditional write: the caller's view is stale.
func isVersionConflict(err error) bool {
	return errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode)
}

// errNotFound maps zk.ErrNoNode to drover.ErrNotFound, naming the path.
func errNotFound(p string) error {
	return fmt.Errorf("%w: %s", drover.ErrNotFound, p)
}
