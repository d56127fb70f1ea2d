package executor

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// The process group under every task, whether a per-task process
// (process.go) or a pooled child (pool_proc.go): the leader starts in a
// group of its own and dies with the worker; its exit is noticed without
// reaping it, so that its pid, and with it the group's id, stays the
// executor's until everything left in the group has been killed; then it
// is reaped. Stopping a task that timed out or was cancelled (SIGTERM to the
// group, SIGKILL after the grace) and the words that report it are shared
// here too.

// groupLeader is a started process leading its own process group.
type groupLeader struct {
	pid    int
	exited chan struct{} // closed when the process has exited (not yet reaped: see reap)
	status exitStatus    // valid once reap has returned
}

// exitStatus is how a process ended.
type exitStatus struct {
	status syscall.WaitStatus
	err    error
}

// exitCodeAndSignal returns the exit code (-1 when killed) and the signal
// (0 when it exited) of a wait status.
func exitCodeAndSignal(ws syscall.WaitStatus) (int, syscall.Signal) {
	if ws.Signaled() {
		return -1, ws.Signal()
	}
	return ws.ExitStatus(), 0
}

// describeExit says how a process ended.
func describeExit(s exitStatus) string {
	if s.err != nil {
		return s.err.Error()
	}
	return describeWaitStatus(s.status)
}

// describeWaitStatus says how a reaped process ended: "exit status N" or
// "killed by signal N (name)".
func describeWaitStatus(ws syscall.WaitStatus) string {
	code, sig := exitCodeAndSignal(ws)
	if sig != 0 {
		return fmt.Sprintf("killed by signal %d (%s)", int(sig), sig)
	}
	return fmt.Sprintf("exit status %d", code)
}

// fork starts path with argv, env and the descriptors files in dir, as cred,
// leading a new process group, and starts the goroutine that notices its
// exit. The caller must wait for exited, kill what is left of the group
// (killRest), then reap it.
func (g *groupLeader) fork(path string, argv, env []string, dir string, files []uintptr, cred *syscall.Credential) error {
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: files,
		Sys: &syscall.SysProcAttr{
			Setpgid: true, // its own group, so a kill reaches its descendants too
			// Die with the worker. The kernel sends it when the thread
			// that forked exits; Go keeps its threads unless a goroutine
			// locked to one exits, which the worker does not do.
			Pdeathsig:  syscall.SIGKILL,
			Credential: cred,
		},
	})
	if err != nil {
		return err
	}
	g.pid, g.exited = pid, make(chan struct{})
	go g.notice()
	return nil
}

// notice waits for the process to exit, without reaping it, and closes
// exited. The exited process stays a zombie, so its pid — and with it its
// process group's id — cannot be reused until reap: a kill of the group, or
// the lease forgetting it, can never hit another group.
func (g *groupLeader) notice() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, g.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		g.status.err = err
		close(g.exited)
		return
	}
}

// hasExited reports whether the process is gone.
func (g *groupLeader) hasExited() bool {
	select {
	case <-g.exited:
		return true
	default:
		return false
	}
}

// killRest sends SIGKILL to the group, to whatever the leader left in it
// when it has exited, and stops lease (nil: none) from tracking the group.
// The leader must not be reaped yet: its zombie keeps the group's id ours,
// so neither this kill nor the lease's can reach a stranger. A broken lease
// tracks nothing any more: its error is of no use.
func (g *groupLeader) killRest(lease *Lease) {
	killGroup(g.pid, syscall.SIGKILL)
	if lease != nil {
		_ = lease.Untrack(g.pid)
	}
}

// reap collects the exited leader's status into status (after exited is
// closed).
func (g *groupLeader) reap() {
	if g.status.err != nil {
		return
	}
	for {
		_, err := syscall.Wait4(g.pid, &g.status.status, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		g.status.err = err
		return
	}
}

// termination is what ended the wait of terminate.
type termination int

const (
	termExited   termination = iota // the leader exited within the grace
	termAborted                     // ctx ended first
	termOutlived                    // the grace passed first: the caller sends SIGKILL
)

// terminate ends a task that timed out or was cancelled (outcome
// OutcomeTimeout or OutcomeCancelled): it sends SIGTERM to the group (named
// by group in the log) and waits until the leader exits, ctx ends or grace
// passes, and says which came first. It sends no SIGKILL.
func (g *groupLeader) terminate(ctx context.Context, log hclog.Logger, outcome Outcome, group string, deadline time.Time, grace time.Duration) termination {
	why := "task timed out"
	if outcome == OutcomeCancelled {
		why = "task cancelled"
	}
	log.Warn(why+": sending SIGTERM to "+group, "deadline", deadline, "grace", grace)
	killGroup(g.pid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-t.C:
		log.Warn("task outlived its grace: sending SIGKILL to " + group)
		return termOutlived
	case <-g.exited:
		return termExited
	case <-ctx.Done():
		return termAborted
	}
}

// killGroup sends sig to the process group pgid. ESRCH (the group is
// already empty) is the normal case after the leader exits.
func killGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// processGroup and pooledGroup name the group a task's SIGTERM goes to, in
// logs and reasons.
const (
	processGroup = "its process group"
	pooledGroup  = "its pooled child's process group"
)

// stopReason is the reason of a task that timed out (outcome
// OutcomeTimeout) or was cancelled, and was stopped with SIGTERM to group,
// then SIGKILL after grace when forced.
func stopReason(t *Task, outcome Outcome, deadline time.Time, group string, forced bool, grace time.Duration) string {
	reason := "cancelled"
	if outcome == OutcomeTimeout {
		reason = "timed out at " + deadline.Format(time.RFC3339Nano)
		if t.Timeout > 0 {
			reason += " (timeout " + t.Timeout.String() + ")"
		}
	}
	reason += ": sent SIGTERM to " + group
	if forced {
		reason += ", then SIGKILL after " + grace.String()
	}
	return reason
}
