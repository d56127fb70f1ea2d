// Package zksession hands out a live ZooKeeper session and, after the
// session is lost, connects a new one lazily, with backoff: the one
// session policy of the processes that only read and steer the fleet
// (drover scaler, drover web, drover ctl). A fleet member keeps its own
// (fleet.Member): its session carries its membership.
package zksession

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// Default backoff bounds of Config.
const (
	DefaultMinBackoff = 250 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
)

// ErrBackingOff is returned (wrapping the last connect error) by a call
// that comes before the backoff after a failed connect has passed: no
// connect is tried then.
var ErrBackingOff = errors.New("zksession: backing off after a failed connect")

// Config configures a Keeper. Only Connect is required.
type Config struct {
	// Connect opens a session; ctx bounds the attempt. Required
	// (coordinator.Connect with the process's coordinator.Config: see
	// Dial).
	Connect func(ctx context.Context) (*coordinator.Session, error)
	// MinBackoff is the wait after a first failed connect before the next
	// try; it doubles with every failure up to MaxBackoff and is reset by a
	// success. Defaults: DefaultMinBackoff, DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Renewed, when set, is called with every session after the first
	// (outside the Keeper's lock), so that what was built on the old one
	// can be rebuilt.
	Renewed func(*coordinator.Session)
	// Now is the backoff's clock. Default time.Now.
	Now func() time.Time
	// Logger receives a line a loss and a renewal. Default: discard.
	Logger hclog.Logger
}

// Keeper holds at most one session. Its methods are safe for concurrent
// use.
type Keeper struct {
	cfg Config

	connecting sync.Mutex // held for a connect attempt

	mu      sync.Mutex
	cur     *coordinator.Session // the last session connected; nil before the first
	lastErr error                // the last connect's failure, nil after a success
	retryAt time.Time            // no connect before this (after a failure)
	wait    time.Duration        // the backoff after the next failure
	closed  bool
	// connected is closed, and replaced, each time cur changes (Next).
	connected chan struct{}
}

// New returns a Keeper that has not connected yet.
func New(cfg Config) (*Keeper, error) {
	if cfg.Connect == nil {
		return nil, fmt.Errorf("zksession: Config.Connect: %w: required", drover.ErrInvalidConfig)
	}
	if cfg.MinBackoff < 0 || cfg.MaxBackoff < 0 {
		return nil, fmt.Errorf("zksession: Config.MinBackoff, MaxBackoff: %w: want ≥ 0", drover.ErrInvalidConfig)
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Keeper{cfg: cfg, wait: cfg.MinBackoff, connected: make(chan struct{})}, nil
}

// Dial is New with Connect = coordinator.Connect(ctx, cc).
func Dial(cc coordinator.Config, cfg Config) (*Keeper, error) {
	cfg.Connect = func(ctx context.Context) (*coordinator.Session, error) { return coordinator.Connect(ctx, cc) }
	return New(cfg)
}

// Session returns the session while it is not lost. Otherwise (before the
// first call, after a loss) it connects a new one, blocking for the
// attempt, which ctx bounds; concurrent callers wait for the same attempt
// (not for ctx) and then share its session or its failure. A failed
// attempt is returned as it is, and calls until the backoff has passed
// return at once with an error wrapping ErrBackingOff and it. After Close
// it returns an error wrapping drover.ErrSessionLost.
func (k *Keeper) Session(ctx context.Context) (*coordinator.Session, error) {
	if s, done, err := k.live(); done {
		return s, err
	}
	k.connecting.Lock()
	defer k.connecting.Unlock()
	s, done, err := k.live() // a concurrent caller's attempt may have ended it
	if done {
		return s, err
	}
	if old := k.Current(); old != nil {
		k.cfg.Logger.Warn("ZooKeeper session lost: reconnecting", "error", old.Err())
	}
	s, err = k.cfg.Connect(ctx)

	k.mu.Lock()
	if err != nil {
		k.lastErr, k.retryAt = err, k.cfg.Now().Add(k.wait)
		k.cfg.Logger.Warn("connect to ZooKeeper", "error", err, "retry_in", k.wait)
		k.wait = min(2*k.wait, k.cfg.MaxBackoff)
		k.mu.Unlock()
		return nil, err
	}
	if k.closed {
		k.mu.Unlock()
		s.Close()
		return nil, errClosed
	}
	old := k.cur
	k.cur, k.lastErr, k.wait = s, nil, k.cfg.MinBackoff
	close(k.connected)
	k.connected = make(chan struct{})
	k.mu.Unlock()
	if old != nil {
		old.Close()
		k.cfg.Logger.Info("ZooKeeper session renewed")
		if k.cfg.Renewed != nil {
			k.cfg.Renewed(s)
		}
	}
	return s, nil
}

var errClosed = fmt.Errorf("zksession: closed: %w", drover.ErrSessionLost)

// live answers Session without connecting when it can: done is false
// when a connect is to be tried.
func (k *Keeper) live() (s *coordinator.Session, done bool, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.closed:
		return nil, true, errClosed
	case k.cur != nil && k.cur.Err() == nil:
		return k.cur, true, nil
	case k.lastErr != nil:
		if left := k.retryAt.Sub(k.cfg.Now()); left > 0 {
			return nil, true, fmt.Errorf("%w (next try in %s): %w", ErrBackingOff, left.Round(time.Millisecond), k.lastErr)
		}
	}
	return nil, false, nil
}

// Next returns the first session the Keeper connected other than prev
// (prev nil: its first session), at once when it has one, else when a
// connect (Keep's or a caller's of Session) makes one. It never connects
// itself. It fails with ctx's error when ctx ends first, and with an error
// wrapping drover.ErrSessionLost after Close. For a process that builds on
// each new session (drover web, which may start before ZooKeeper answers).
func (k *Keeper) Next(ctx context.Context, prev *coordinator.Session) (*coordinator.Session, error) {
	for {
		k.mu.Lock()
		cur, changed, closed := k.cur, k.connected, k.closed
		k.mu.Unlock()
		switch {
		case closed:
			return nil, errClosed
		case cur != nil && cur != prev:
			return cur, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		}
	}
}

// Current returns the last session connected, lost or not, or nil before
// the first; it never connects. For callers that must not block on a
// connect (a web request): they check its State.
func (k *Keeper) Current() *coordinator.Session {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cur
}

// Keep renews the session each time it is lost, until ctx ends, so that a
// process that serves meanwhile (drover web) gets its session back without
// waiting for a caller: it waits for the session's end, then calls Session
// until it succeeds, waiting out each backoff. It returns nil when ctx ends
// or the Keeper is closed.
func (k *Keeper) Keep(ctx context.Context) error {
	for {
		s, err := k.Session(ctx)
		if err == nil {
			select {
			case <-ctx.Done():
				return nil
			case <-s.Done():
				continue
			}
		}
		if ctx.Err() != nil || k.isClosed() {
			return nil
		}
		t := time.NewTimer(k.untilRetry())
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// untilRetry is how long until the next connect may be tried.
func (k *Keeper) untilRetry() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return max(k.retryAt.Sub(k.cfg.Now()), 0)
}

func (k *Keeper) isClosed() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.closed
}

// Close closes the session and makes every later Session call fail; a
// session that a connect in progress makes is closed when it arrives. It
// is idempotent.
func (k *Keeper) Close() {
	k.mu.Lock()
	s := k.cur
	if !k.closed {
		close(k.connected) // wakes Next
		k.connected = make(chan struct{})
	}
	k.closed = true
	k.mu.Unlock()
	if s != nil {
		s.Close()
	}
}
