package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/drover-dev/drover"
)

// Lease keeps task process groups alive only while the worker renews it.
//
// A worker frozen past its ZooKeeper session timeout (SIGSTOP, a stuck
// syscall, a debugger, a VM stall) cannot kill anything, yet its session
// expires and another member runs its queues: its tasks, in their own
// process groups, would run beside the new owner's. A Lease closes that
// window: a small supervisor process (the worker binary re-executed,
// lease_supervisor.go), which is not frozen with the worker, sends SIGTERM
// to every tracked process group when the last renewal is more than Bound
// old on CLOCK_BOOTTIME, and SIGKILL Grace later. The worker renews while
// its session is confirmed (worker.Config.Renew); the executor tracks every
// task's group from its start until it is reaped.
//
// Any long-lived child that runs tasks (a pooled child, say) gets the same
// protection with the same two calls: Track(pgid) right after it is started
// in its own process group, Untrack(pgid) after the group is dead and before
// the leader is reaped (so that its pid, and with it the group id, cannot
// have been reused by then).
//
// The cost on the task path is one write(2) of 16 bytes at the start and
// one at the end of a task; the supervisor reads them on its own tick and
// is never woken by them.
//
// All methods are safe for concurrent use.
type Lease struct {
	bound, grace time.Duration
	pid          int // the supervisor's
	exited       chan struct{}

	mu     sync.RWMutex // write lock: Close; read lock: writes to fd
	fd     int          // write end of the lease pipe; -1 after Close
	broken error        // set when the supervisor is gone

	lastRenew atomic.Int64  // CLOCK_BOOTTIME stamp of the last renewal written
	renewMu   sync.Mutex    // guards renewed
	renewed   chan struct{} // closed and replaced by every renewal
	waiting   atomic.Int32  // AwaitFresh calls blocked on a renewal
}

// LeaseConfig configures NewLease.
type LeaseConfig struct {
	// Bound is how late a renewal may be before the supervisor kills every
	// tracked group. Required. For a worker, a third of its ZooKeeper
	// session timeout: see docs/semantics.md for the arithmetic.
	Bound time.Duration
	// Grace is how long a group has between SIGTERM and SIGKILL once the
	// lease fired. Default Bound/8.
	Grace time.Duration
	// Self is the worker binary, re-executed as the supervisor; its main
	// must call RunChildIfRequested first. Default: DefaultSelf.
	Self string
	// Stderr receives the supervisor's notices (one line per firing).
	// Default: the worker's os.Stderr.
	Stderr *os.File
}

// ErrLeaseGone is wrapped by the errors of a Lease whose supervisor exited
// or which was closed: no task may start under it.
var ErrLeaseGone = errors.New("task lease: the supervisor is gone")

// NewLease starts the supervisor and returns the Lease, armed now: it fires
// unless renewed within Bound.
func NewLease(cfg LeaseConfig) (*Lease, error) {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: lease: %s: %s", drover.ErrInvalidConfig, field, fmt.Sprintf(format, a...))
	}
	if cfg.Bound <= 0 {
		return nil, bad("Bound", "must be > 0, have %s", cfg.Bound)
	}
	switch {
	case cfg.Grace < 0:
		return nil, bad("Grace", "must be ≥ 0, have %s", cfg.Grace)
	case cfg.Grace == 0:
		cfg.Grace = max(cfg.Bound/8, time.Millisecond)
	}
	if cfg.Self == "" {
		cfg.Self = DefaultSelf
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	name := "drover"
	if exe, err := os.Executable(); err == nil {
		name = filepath.Base(exe)
	}
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("lease pipe: %w", err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, err
	}
	defer devnull.Close()
	armed := boottime()
	argv := []string{name, childArgLease, strconv.FormatInt(int64(cfg.Bound), 10),
		strconv.FormatInt(int64(cfg.Grace), 10), strconv.FormatInt(armed, 10)}
	env := append(baseEnv(os.Environ()), childEnv+"="+childModeLease)
	pid, err := syscall.ForkExec(cfg.Self, argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{devnull.Fd(), devnull.Fd(), cfg.Stderr.Fd(), uintptr(fds[0])},
		// Its own group: a signal to the worker's group (a terminal's ^C)
		// is not for it. No parent-death signal: when the worker dies,
		// the supervisor must outlive it long enough to kill the groups.
		Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	syscall.Close(fds[0])
	if err != nil {
		syscall.Close(fds[1])
		return nil, fmt.Errorf("start the lease supervisor %s: %w", cfg.Self, err)
	}
	l := &Lease{bound: cfg.Bound, grace: cfg.Grace, pid: pid, fd: fds[1], exited: make(chan struct{}),
		renewed: make(chan struct{})}
	l.lastRenew.Store(armed)
	go l.reap()
	return l, nil
}

// reap waits for the supervisor; its exit breaks the lease.
func (l *Lease) reap() {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(l.pid, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		break
	}
	l.mu.Lock()
	if l.broken == nil {
		l.broken = fmt.Errorf("%w (pid %d exited: %v)", ErrLeaseGone, l.pid, ws)
	}
	l.mu.Unlock()
	close(l.exited)
}

// Done is closed when the supervisor has exited (after Close, or because
// it died: then no task can start under the lease).
func (l *Lease) Done() <-chan struct{} { return l.exited }

// Err returns nil while the supervisor runs, then why it is gone.
func (l *Lease) Err() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.broken
}

// Bound returns how late a renewal may be before the lease fires.
func (l *Lease) Bound() time.Duration { return l.bound }

// Grace returns how long a group has between SIGTERM and SIGKILL.
func (l *Lease) Grace() time.Duration { return l.grace }

// SupervisorPID returns the supervisor's process id.
func (l *Lease) SupervisorPID() int { return l.pid }

// Renew extends the lease by Bound from now. The caller renews only while
// it knows it may run tasks (worker.Config.Renew: the session confirmed,
// no freeze pending), and well within Bound of the previous renewal.
func (l *Lease) Renew() error {
	stamp := boottime()
	if err := l.write(leaseRecord{op: opRenew, stamp: stamp}); err != nil {
		return err
	}
	l.lastRenew.Store(stamp)
	l.renewMu.Lock()
	close(l.renewed)
	l.renewed = make(chan struct{})
	l.renewMu.Unlock()
	return nil
}

// Fresh reports whether the last renewal is less than half the bound old:
// what AwaitFresh waits for. The executor asks again right after a start,
// because a freeze can fall between AwaitFresh and the fork.
func (l *Lease) Fresh() bool { return boottime()-l.lastRenew.Load() <= int64(l.bound/2) }

// AwaitFresh returns at once while the last renewal is less than half the
// bound old (always, while the worker renews every 100 ms), and otherwise
// waits for the next renewal. The executor calls it before starting a task:
// a worker resumed from a freeze must not start a task before it knows its
// session still holds (it renews only then; if the session was lost, the
// abort that follows cancels ctx). It fails with ctx's cause, or wrapping
// ErrLeaseGone.
func (l *Lease) AwaitFresh(ctx context.Context) error {
	for {
		if l.Fresh() {
			return nil
		}
		l.renewMu.Lock()
		ch := l.renewed
		l.renewMu.Unlock()
		if l.Fresh() {
			return nil // renewed meanwhile
		}
		l.waiting.Add(1)
		select {
		case <-ch:
		case <-ctx.Done():
		case <-l.exited:
		}
		l.waiting.Add(-1)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err := l.Err(); err != nil {
			return err
		}
	}
}

// Track puts process group pgid under the lease. It fails, wrapping
// ErrLeaseGone, when the supervisor is gone; the caller must then kill the
// group itself: nothing would stop it if the worker froze.
func (l *Lease) Track(pgid int) error { return l.write(leaseRecord{op: opTrack, pid: pgid}) }

// Untrack takes group pgid out of the lease. Call it when the group is dead
// and before its leader is reaped.
func (l *Lease) Untrack(pgid int) error { return l.write(leaseRecord{op: opUntrack, pid: pgid}) }

func (l *Lease) write(r leaseRecord) error {
	var b [leaseRecordSize]byte
	r.encode(&b)
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.broken != nil {
		return l.broken
	}
	if l.fd < 0 {
		return fmt.Errorf("%w: closed", ErrLeaseGone)
	}
	for {
		// One write of 16 bytes: atomic on a pipe, so concurrent
		// writers never interleave.
		_, err := syscall.Write(l.fd, b[:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrLeaseGone, err)
		}
		return nil
	}
}

// Close ends the lease: the supervisor kills whatever is still tracked
// (nothing, after a graceful drain) and exits. Close waits for it and is
// idempotent.
func (l *Lease) Close() error {
	l.mu.Lock()
	if l.fd >= 0 {
		syscall.Close(l.fd)
		l.fd = -1
	}
	l.mu.Unlock()
	<-l.exited
	return nil
}
