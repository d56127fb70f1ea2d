package executor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/tracing"
	"github.com/hashicorp/go-hclog"
)

// Exit codes with a meaning to the executor.
const (
	// ExitRetry (EX_TEMPFAIL from sysexits.h) asks for a retry.
	ExitRetry = 75
	// exitChildSetup: a re-executed child could not set itself up (bad
	// arguments, setrlimit or exec failed); stderr says why.
	exitChildSetup = 126
	// exitGoTimeout: a Go handler in a child failed after its deadline
	// passed. Only a "go" child's 124 means timeout; a command's 124 is an
	// ordinary failure.
	exitGoTimeout = 124
)

// execExecutor runs tasks as child processes: "command" routes directly (or
// through the rlimit trampoline), "go" routes as re-executed children of the
// worker binary.
type execExecutor struct {
	clock       drover.Clock
	logger      hclog.Logger
	grace       time.Duration
	outputLimit int
	env         []string // base environment, DROVER_* removed
	self        string   // path of the worker binary
	selfName    string   // argv[0] of re-executed children
	ids         identities
	bufs        *sync.Pool
	pools       *pools // warm children of pooled routes
	lease       *Lease // nil: tasks run without a lease
	beforeStart func() // tests: runs between AwaitFresh and the fork (or a pooled task's frame)
}

func newExecExecutor(cfg Config) *execExecutor {
	name := "drover"
	if exe, err := os.Executable(); err == nil {
		name = filepath.Base(exe)
	}
	return &execExecutor{
		clock: cfg.Clock, logger: cfg.Logger, grace: cfg.KillGrace, outputLimit: cfg.OutputLimit,
		env: cfg.Env, self: cfg.Self, selfName: name, bufs: newReadBuffers(), lease: cfg.Lease,
	}
}

// Execute runs a "command" route. It implements Executor.
func (e *execExecutor) Execute(ctx context.Context, t *Task) Result {
	start := e.clock.Now()
	path, err := commandPath(t.Route.Command[0])
	if err != nil {
		return neverRan(start, err.Error())
	}
	return e.run(ctx, t, procSpec{path: path, argv: t.Route.Command}, start)
}

// executeGo runs a "go" route: the worker binary re-executed as a child that
// runs the registered handler (RunChildIfRequested).
func (e *execExecutor) executeGo(ctx context.Context, t *Task) Result {
	start := e.clock.Now()
	if _, ok := drover.LookupHandler(t.Message.Task); !ok {
		return neverRan(start, fmt.Sprintf("no Go handler registered for task %q", t.Message.Task))
	}
	argv := []string{e.selfName, childArgGo, t.Message.Task}
	return e.run(ctx, t, procSpec{path: e.self, argv: argv, childMode: childModeGo}, start)
}

// run starts spec for t, waits for it under t's deadline and ctx, and
// reports the result.
func (e *execExecutor) run(ctx context.Context, t *Task, spec procSpec, start time.Time) Result {
	deadline := deadlineOf(t, start)
	id, err := e.runAs(t)
	if err != nil {
		return neverRan(start, err.Error())
	}
	env, err := taskEnv(e.env, id, t, deadline)
	if err != nil {
		return neverRan(start, err.Error())
	}
	env = append(env, tracing.Env(ctx)...) // TRACEPARENT, TRACESTATE of the task's span, if any
	if err := checkLimits(t.Limits); err != nil {
		return neverRan(start, err.Error())
	}
	path, argv, env := e.commandLine(spec, t.Limits, env)
	envelope, err := envelopeOf(t)
	if err != nil {
		return neverRan(start, err.Error())
	}
	if e.lease != nil {
		// A worker resumed from a freeze starts nothing before it renewed
		// its lease again (its session confirmed) or is aborted.
		if err := e.lease.AwaitFresh(ctx); err != nil && ctx.Err() == nil {
			return neverRan(start, fmt.Sprintf("start %s: %v", spec.argv[0], err))
		}
	}
	if r, late := tooLateToStart(ctx, start, deadline); late {
		return r
	}
	if cancelledBeforeStart(t) {
		return neverRanCancelled(start)
	}
	if e.beforeStart != nil {
		e.beforeStart()
	}
	p, err := startProcess(path, argv, env, t.Route.Dir, id.credential(), envelope, e.outputLimit, e.bufs)
	if err != nil {
		return neverRan(start, fmt.Sprintf("start %s: %v", spec.argv[0], err))
	}
	if e.lease != nil {
		// Nothing would stop the task if the worker froze: do not let it
		// run untracked.
		if err := e.lease.Track(p.pid); err != nil {
			return e.stopAtStart(p, neverRan(start, fmt.Sprintf("start %s: %v", spec.argv[0], err)))
		}
		// A freeze between AwaitFresh and the fork (found by a chaos run:
		// a zombie's task started 13 ms after SIGCONT, beside the new
		// owner's) leaves the lease stale now; the supervisor would kill
		// the group only at its next tick, and the queue may already run
		// elsewhere. The attempt does not count: it never ran for this
		// worker's session.
		if !e.lease.Fresh() {
			r := neverRan(start, "aborted at start: the lease went stale before the task started (the worker was frozen)")
			r.Outcome = OutcomeAborted
			return e.stopAtStart(p, r)
		}
	}
	if t.OnStart != nil {
		t.OnStart(p.pid)
	}
	res := e.wait(ctx, t, p, deadline, spec.childMode == childModeGo)
	res.Started = start
	res.Duration = e.clock.Now().Sub(start)
	e.logOutput(t, res, p.stdout.Truncated(), p.stderr.Truncated())
	return res
}

// stopAtStart kills p's group at once, reaps it and returns r with its pid:
// a task the executor must not let run.
func (e *execExecutor) stopAtStart(p *process, r Result) Result {
	// As wait does, before the reap: a group left tracked is signalled by
	// the supervisor later, when its id may belong to a stranger.
	p.killRest(e.lease)
	<-p.exited
	p.reap()
	p.collect()
	r.PID = p.pid
	return r
}

// wait waits for p's process to exit: until the deadline or t.Cancel (then
// SIGTERM to its group, and SIGKILL after the grace) or until ctx is cancelled (then
// SIGKILL at once). It then kills whatever is left of the group, collects
// the output and classifies the end.
func (e *execExecutor) wait(ctx context.Context, t *Task, p *process, deadline time.Time, goChild bool) Result {
	pid := p.pid
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		tm := time.NewTimer(deadline.Sub(e.clock.Now()))
		defer tm.Stop()
		timeout = tm.C
	}
	var (
		aborted bool
		stopped Outcome // OutcomeTimeout or OutcomeCancelled: ended by SIGTERM
		forced  bool    // SIGKILL after the grace
	)
	abort := func() {
		aborted = true
		taskLogger(e.logger, t, pid).Warn("aborting task: killing "+processGroup, "cause", context.Cause(ctx))
		killGroup(pid, syscall.SIGKILL)
		<-p.exited
	}
	// terminate sends SIGTERM to the group, and SIGKILL after the grace:
	// the end of a task that timed out or was cancelled.
	terminate := func(outcome Outcome) {
		stopped = outcome
		switch p.terminate(ctx, taskLogger(e.logger, t, pid), outcome, processGroup, deadline, e.grace) {
		case termAborted:
			abort()
		case termOutlived:
			forced = true
			killGroup(pid, syscall.SIGKILL)
			<-p.exited
		}
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		abort()
	case <-timeout:
		terminate(OutcomeTimeout)
	case <-t.Cancel:
		terminate(OutcomeCancelled)
	}
	// The leader is gone; so must be everything it left in its group.
	p.killRest(e.lease)
	p.reap()
	p.collect()

	res := Result{ExitCode: -1, PID: pid, Stdout: p.stdout.Bytes(), Stderr: p.stderr.Bytes()}
	w := p.status
	if w.err != nil {
		res.Outcome, res.Reason = OutcomeFailure, fmt.Sprintf("wait for process %d: %v", pid, w.err)
		return res
	}
	switch {
	case aborted:
		res.ExitCode, res.Signal = exitCodeAndSignal(w.status)
		res.Outcome, res.Reason = OutcomeAborted, "aborted: "+context.Cause(ctx).Error()
	case stopped != "":
		res.ExitCode, res.Signal = exitCodeAndSignal(w.status)
		res.Outcome, res.Reason = stopped, stopReason(t, stopped, deadline, processGroup, forced, e.grace)
	default:
		res.Outcome, res.ExitCode, res.Signal, res.Reason = classifyExit(w.status, goChild, res.Stderr)
	}
	return res
}

// classifyExit maps how a process ended on its own (no timeout, no abort)
// to an outcome: exit 0 success, 75 retry, 124 of a "go" child timeout,
// anything else (other codes, signals) failure. The reason ends with the
// last line of stderr.
func classifyExit(ws syscall.WaitStatus, goChild bool, stderr []byte) (Outcome, int, syscall.Signal, string) {
	code, sig := exitCodeAndSignal(ws)
	switch {
	case sig != 0:
		return OutcomeFailure, code, sig, withLastLine(describeWaitStatus(ws), stderr)
	case code == 0:
		return OutcomeSuccess, code, 0, "exit status 0"
	case code == ExitRetry:
		return OutcomeRetry, code, 0, withLastLine("exit status 75 (EX_TEMPFAIL): retry requested", stderr)
	case goChild && code == exitGoTimeout:
		return OutcomeTimeout, code, 0, withLastLine("handler failed after its deadline", stderr)
	}
	return OutcomeFailure, code, 0, withLastLine(describeWaitStatus(ws), stderr)
}

// withLastLine appends the last non-empty line of stderr to reason,
// shortened to 200 bytes, so that a dead letter's reason says what the task
// said.
func withLastLine(reason string, stderr []byte) string {
	s := bytes.TrimRight(stderr, "\r\n\t ")
	if i := bytes.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = bytes.TrimSpace(s)
	if len(s) == 0 {
		return reason
	}
	if len(s) > 200 {
		s = append(s[:197:197], "..."...)
	}
	return reason + ": " + string(s)
}

// logOutput logs the task's output tails: at Debug after a success, at Warn
// otherwise.
func (e *execExecutor) logOutput(t *Task, res Result, stdoutTruncated, stderrTruncated bool) {
	level, enabled := hclog.Warn, e.logger.IsWarn()
	if res.Outcome == OutcomeSuccess {
		level, enabled = hclog.Debug, e.logger.IsDebug()
	}
	if !enabled || (len(res.Stdout) == 0 && len(res.Stderr) == 0) {
		return
	}
	log := taskLogger(e.logger, t, res.PID)
	if len(res.Stdout) > 0 {
		log.Log(level, "task stdout", "outcome", res.Outcome, "truncated", stdoutTruncated, "output", string(res.Stdout))
	}
	if len(res.Stderr) > 0 {
		log.Log(level, "task stderr", "outcome", res.Outcome, "truncated", stderrTruncated, "output", string(res.Stderr))
	}
}
