package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover-dev/drover"
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

// outputDrainTimeout bounds how long the executor reads a task's output
// after its process group is gone. Only a descendant that left the group
// (setsid) and kept stdout or stderr open can hold it up.
const outputDrainTimeout = time.Second

// stdinPrefill is the largest envelope written into the stdin pipe before
// the child starts. A pipe always holds at least one page, even when the
// user's pipe quota is exhausted, so such a write never blocks; a larger
// envelope is written by a goroutine while the child reads.
const stdinPrefill = 4096

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
}

func newExecExecutor(cfg ExecConfig) *execExecutor {
	name := "drover"
	if exe, err := os.Executable(); err == nil {
		name = filepath.Base(exe)
	}
	return &execExecutor{
		clock: cfg.Clock, logger: cfg.Logger, grace: cfg.KillGrace, outputLimit: cfg.OutputLimit,
		env: cfg.Env, self: cfg.Self, selfName: name, bufs: newReadBuffers(),
	}
}

// procSpec is the process a task runs as, before the trampoline.
type procSpec struct {
	path      string
	argv      []string
	childMode string // "" for a command, childModeGo for a Go handler
}

// Execute runs a "command" route. It implements Executor.
func (e *execExecutor) Execute(ctx context.Context, t *Task) Result {
	start := e.clock.Now()
	name := t.Route.Command[0]
	path := name
	if !strings.Contains(name, "/") {
		// Like os/exec, search the worker's PATH. A name with a slash is
		// left to the kernel, relative to the route's Dir.
		p, err := exec.LookPath(name)
		if err != nil {
			return neverRan(start, fmt.Sprintf("find command %q: %v", name, err))
		}
		path = p
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
	id, err := e.ids.lookup(t.User, t.Group)
	if err != nil {
		return neverRan(start, fmt.Sprintf("run as user %q group %q: %v", t.User, t.Group, err))
	}
	env, err := taskEnv(e.env, id, t, deadline)
	if err != nil {
		return neverRan(start, err.Error())
	}
	if err := checkLimits(t.Limits); err != nil {
		return neverRan(start, err.Error())
	}
	path, argv := spec.path, spec.argv
	if limitsSet(t.Limits) {
		// Go cannot set a child's rlimits between fork and exec, and
		// prlimit after the start races with the child; so the worker
		// binary sets them on itself and then execs the real program.
		argv = trampolineArgs(e.selfName, t.Limits, spec.childMode, path, argv)
		path = e.self
		env = append(env, childEnv+"="+childModeExec)
	} else if spec.childMode != "" {
		env = append(env, childEnv+"="+spec.childMode)
	}
	envelope := t.Envelope
	if len(envelope) == 0 {
		if envelope, err = json.Marshal(t.Message); err != nil {
			return neverRan(start, fmt.Sprintf("encode envelope: %v", err))
		}
	}
	if err := context.Cause(ctx); err != nil {
		r := neverRan(start, "aborted before start: "+err.Error())
		r.Outcome = OutcomeAborted
		return r
	}
	if !deadline.IsZero() && !deadline.After(start) {
		r := neverRan(start, "deadline passed before the task started")
		r.Outcome = OutcomeTimeout
		return r
	}
	var cred *syscall.Credential
	if id != nil {
		cred = id.cred
	}
	p, err := e.start(path, argv, env, t.Route.Dir, cred, envelope)
	if err != nil {
		return neverRan(start, fmt.Sprintf("start %s: %v", spec.argv[0], err))
	}
	res := e.wait(ctx, t, p, deadline, spec.childMode == childModeGo)
	res.Started = start
	res.Duration = e.clock.Now().Sub(start)
	e.logOutput(t, res, p.stdout.Truncated(), p.stderr.Truncated())
	return res
}

// process is a started task process and the goroutines that serve it.
type process struct {
	proc           *os.Process
	stdout, stderr *tailBuffer
	outR, errR     *os.File
	stdinW         *os.File      // nil when the envelope was prefilled
	done           chan struct{} // one value per finished I/O goroutine
	pending        int           // I/O goroutines not yet finished
}

// start starts the process in its own process group, with the envelope on
// stdin and stdout and stderr read into tail buffers by goroutines.
func (e *execExecutor) start(path string, argv, env []string, dir string, cred *syscall.Credential, envelope []byte) (*process, error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	if len(envelope) <= stdinPrefill {
		_, err = stdinW.Write(envelope)
		stdinW.Close()
		stdinW = nil
		if err != nil {
			stdinR.Close()
			return nil, fmt.Errorf("write envelope to stdin pipe: %w", err)
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW)
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW, outR, outW)
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	proc, err := os.StartProcess(path, argv, &os.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []*os.File{stdinR, outW, errW},
		Sys: &syscall.SysProcAttr{
			Setpgid: true, // its own group, so a kill reaches its descendants too
			// Die with the worker. The kernel sends it when the thread
			// that forked exits; Go keeps its threads unless a goroutine
			// locked to one exits, which the worker does not do.
			Pdeathsig:  syscall.SIGKILL,
			Credential: cred,
		},
	})
	closeAll(stdinR, outW, errW)
	if err != nil {
		closeAll(stdinW, outR, errR)
		return nil, err
	}
	p := &process{
		proc: proc, outR: outR, errR: errR, stdinW: stdinW,
		stdout: newTailBuffer(e.outputLimit), stderr: newTailBuffer(e.outputLimit),
		done: make(chan struct{}, 3), pending: 2,
	}
	go drainInto(p.stdout, outR, e.bufs, p.done)
	go drainInto(p.stderr, errR, e.bufs, p.done)
	if stdinW != nil {
		p.pending++
		go func() {
			defer func() { p.done <- struct{}{} }()
			// EPIPE (the task did not read it all) is the task's business.
			_, _ = stdinW.Write(envelope)
			stdinW.Close()
		}()
	}
	return p, nil
}

// waitResult is what os.Process.Wait returned.
type waitResult struct {
	state *os.ProcessState
	err   error
}

// wait waits for p's process to exit: until the deadline (then SIGTERM to
// its group, and SIGKILL after the grace) or until ctx is cancelled (then
// SIGKILL at once). It then kills whatever is left of the group, collects
// the output and classifies the end.
func (e *execExecutor) wait(ctx context.Context, t *Task, p *process, deadline time.Time, goChild bool) Result {
	pid := p.proc.Pid
	waited := make(chan waitResult, 1)
	go func() {
		st, err := p.proc.Wait()
		waited <- waitResult{st, err}
	}()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		tm := time.NewTimer(deadline.Sub(e.clock.Now()))
		defer tm.Stop()
		timeout = tm.C
	}
	var (
		w                 waitResult
		timedOut, aborted bool
		forced            bool // SIGKILL after the grace
	)
	abort := func() {
		aborted = true
		taskLogger(e.logger, t, pid).Warn("aborting task: killing its process group", "cause", context.Cause(ctx))
		killGroup(pid, syscall.SIGKILL)
		w = <-waited
	}
	select {
	case w = <-waited:
	case <-ctx.Done():
		abort()
	case <-timeout:
		timedOut = true
		log := taskLogger(e.logger, t, pid)
		log.Warn("task timed out: sending SIGTERM to its process group", "deadline", deadline, "grace", e.grace)
		killGroup(pid, syscall.SIGTERM)
		grace := time.NewTimer(e.grace)
		select {
		case w = <-waited:
		case <-ctx.Done():
			abort()
		case <-grace.C:
			forced = true
			log.Warn("task outlived its grace: sending SIGKILL to its process group")
			killGroup(pid, syscall.SIGKILL)
			w = <-waited
		}
		grace.Stop()
	}
	// The leader is gone; so must be everything it left in its group.
	killGroup(pid, syscall.SIGKILL)
	p.collect()

	res := Result{ExitCode: -1, PID: pid, Stdout: p.stdout.Bytes(), Stderr: p.stderr.Bytes()}
	if w.err != nil {
		res.Outcome, res.Reason = OutcomeFailure, fmt.Sprintf("wait for process %d: %v", pid, w.err)
		return res
	}
	status, _ := w.state.Sys().(syscall.WaitStatus)
	if status.Signaled() {
		res.Signal = status.Signal()
	} else {
		res.ExitCode = status.ExitStatus()
	}
	switch {
	case aborted:
		res.Outcome, res.Reason = OutcomeAborted, "aborted: "+context.Cause(ctx).Error()
	case timedOut:
		res.Outcome = OutcomeTimeout
		res.Reason = "timed out at " + deadline.Format(time.RFC3339Nano) + ": sent SIGTERM to its process group"
		if forced {
			res.Reason += fmt.Sprintf(", then SIGKILL after %s", e.grace)
		}
	case res.Signal != 0:
		res.Outcome = OutcomeFailure
		res.Reason = withLastLine(fmt.Sprintf("killed by signal %d (%s)", int(res.Signal), res.Signal), res.Stderr)
	case res.ExitCode == 0:
		res.Outcome, res.Reason = OutcomeSuccess, "exit status 0"
	case res.ExitCode == ExitRetry:
		res.Outcome = OutcomeRetry
		res.Reason = withLastLine("exit status 75 (EX_TEMPFAIL): retry requested", res.Stderr)
	case goChild && res.ExitCode == exitGoTimeout:
		res.Outcome = OutcomeTimeout
		res.Reason = withLastLine("handler failed after its deadline", res.Stderr)
	default:
		res.Outcome = OutcomeFailure
		res.Reason = withLastLine(fmt.Sprintf("exit status %d", res.ExitCode), res.Stderr)
	}
	return res
}

// collect waits for p's I/O goroutines and closes its pipes. Normally they
// finish as soon as the group is dead; a descendant that escaped the group
// and holds a pipe open gets outputDrainTimeout.
func (p *process) collect() {
	deadlineSet := false
	for p.pending > 0 {
		select {
		case <-p.done:
			p.pending--
			continue
		default:
		}
		if !deadlineSet {
			deadlineSet = true
			until := time.Now().Add(outputDrainTimeout)
			_ = p.outR.SetReadDeadline(until)
			_ = p.errR.SetReadDeadline(until)
			if p.stdinW != nil {
				_ = p.stdinW.SetWriteDeadline(until)
			}
		}
		<-p.done
		p.pending--
	}
	closeAll(p.outR, p.errR)
}

// killGroup sends sig to the process group pgid. ESRCH (the group is
// already empty) is the normal case after the leader exits.
func killGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// closeAll closes the non-nil files.
func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
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
