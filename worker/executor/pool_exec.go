package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/tracing"
)

// Running one task on a pooled child: the same rules as a per-task process
// (executor.go), with the child borrowed from its route's pool and given
// back when the task ended cleanly.

// executePooled runs a pooled "command" or "go" route.
func (e *execExecutor) executePooled(ctx context.Context, t *Task) Result {
	start := e.clock.Now()
	if t.Route.Go {
		if _, ok := drover.LookupHandler(t.Message.Task); !ok {
			return neverRan(start, fmt.Sprintf("no Go handler registered for task %q", t.Message.Task))
		}
	}
	if err := checkLimits(t.Limits); err != nil {
		return neverRan(start, err.Error())
	}
	if _, err := e.runAs(t); err != nil {
		return neverRan(start, err.Error())
	}
	// The timeout clock starts when the task is handed to its child: a
	// task that waits for a child (the pool is full, or a child is
	// starting) does not lose its time limit to the wait. Only a deadline
	// set on the task (Task.Deadline) counts from before.
	if r, late := tooLateToStart(ctx, start, t.Deadline); late {
		return r
	}
	envelope, err := envelopeOf(t)
	if err != nil {
		return neverRan(start, err.Error())
	}
	if e.lease != nil {
		// As for a per-task process: a worker resumed from a freeze sends
		// no task before it renewed its lease (or is aborted).
		if err := e.lease.AwaitFresh(ctx); err != nil && ctx.Err() == nil {
			return neverRan(start, "start pooled task: "+err.Error())
		}
	}
	// A child started for the task must be ready within the task's time
	// limit (a start that never ends would hold the task forever).
	readyWithin := childReadyTimeout
	switch {
	case !t.Deadline.IsZero():
		readyWithin = t.Deadline.Sub(start)
	case t.Timeout > 0:
		readyWithin = t.Timeout
	}
	var (
		p *childPool
		c *pooledChild
	)
	// A pool stopped between get and checkout (its queues were paused, or
	// it was swept while idle) is replaced by a new one: only closing the
	// executor aborts the task.
	for range 3 {
		if p = e.pools.get(t); p == nil {
			r := neverRan(start, "aborted before start: the executor is closed")
			r.Outcome = OutcomeAborted
			return r
		}
		c, err = p.checkout(ctx, t.Cancel, e.realDeadline(t.Deadline), readyWithin, t.queue(), t.PoolSize)
		if !errors.Is(err, errPoolStopped) {
			break
		}
	}
	if err != nil {
		r := neverRan(start, "start pooled child: "+err.Error())
		switch {
		case errors.Is(err, errCancelledWaiting):
			return neverRanCancelled(start)
		case ctx.Err() != nil || errors.Is(err, errPoolStopped):
			r.Outcome = OutcomeAborted
		case errors.Is(err, context.DeadlineExceeded):
			r.Outcome, r.Reason = OutcomeTimeout, "no pooled child was ready within the task's time limit"
		}
		return r
	}
	deadline := deadlineOf(t, e.clock.Now())
	if !deadline.IsZero() && !deadline.After(e.clock.Now()) {
		p.checkin(c) // the child never saw the task
		r := neverRan(start, "deadline passed before the task started")
		r.Outcome = OutcomeTimeout
		return r
	}
	if cancelledBeforeStart(t) {
		p.checkin(c) // the child never saw the task (it counts as served: one early recycle at worst)
		return neverRanCancelled(start)
	}
	if t.OnStart != nil {
		t.OnStart(c.pid)
	}
	var truncated [2]bool
	res := p.runTask(ctx, t, c, deadline, envelope, &truncated)
	res.Started = start
	res.Duration = e.clock.Now().Sub(start)
	e.logOutput(t, res, truncated[0], truncated[1])
	return res
}

// maxKeptFrame is the largest task frame buffer a child keeps for its next
// task.
const maxKeptFrame = 64 << 10

// realDeadline converts a deadline by the executor's clock to real time,
// which timers and I/O deadlines use.
func (e *execExecutor) realDeadline(deadline time.Time) time.Time {
	if deadline.IsZero() {
		return deadline
	}
	return time.Now().Add(deadline.Sub(e.clock.Now()))
}

// start starts a child for the pool and waits for its ready frame until ctx
// ends. The child joins the pool's live set.
func (p *childPool) start(ctx context.Context) (*pooledChild, error) {
	e, t := p.ps.e, &p.spec
	id, err := e.runAs(t)
	if err != nil {
		return nil, err
	}
	env, err := poolEnv(e.env, id, t)
	if err != nil {
		return nil, err
	}
	var spec procSpec
	if t.Route.Go {
		spec = procSpec{path: e.self, argv: []string{e.selfName, childArgGoPool}, childMode: childModeGoPool}
	} else {
		path, err := commandPath(t.Route.Command[0])
		if err != nil {
			return nil, err
		}
		spec = procSpec{path: path, argv: t.Route.Command}
	}
	path, argv, env := e.commandLine(spec, t.Limits, env)
	c, err := startPooledChild(path, argv, env, t.Route.Dir, id.credential(), e.outputLimit)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	if e.lease != nil {
		// Under the task lease for its whole life, as a per-task process
		// is for its task: a frozen worker's children are killed too.
		if err := e.lease.Track(c.pid); err != nil {
			c.stop(0, true)
			return nil, fmt.Errorf("start %s: %w", argv[0], err)
		}
		c.lease = e.lease
	}
	fail := func(reason string) (*pooledChild, error) {
		c.stop(0, true)
		return nil, errors.New(withLastLine(reason, c.stderr.leftover()))
	}
	exitedEarly := func() (*pooledChild, error) {
		c.stop(0, true)
		reason := fmt.Sprintf("child %d exited before it was ready: %s", c.pid, describeExit(c.status))
		return nil, errors.New(withLastLine(reason, c.stderr.leftover()))
	}
	select {
	case fr := <-c.results:
		if fr.err != nil {
			if errors.Is(fr.err, io.EOF) {
				<-c.exited
				return exitedEarly()
			}
			return fail(fmt.Sprintf("child %d: %v", c.pid, fr.err))
		}
		var ready readyFrame
		if err := json.Unmarshal(fr.body, &ready); err != nil || ready.Type != frameReady {
			return fail(fmt.Sprintf("child %d: %v: want a ready frame first, have %q", c.pid, errProtocol, clip(fr.body, 80)))
		}
		if ready.Protocol != poolProtocol {
			return fail(fmt.Sprintf("child %d speaks protocol %d, want %d", c.pid, ready.Protocol, poolProtocol))
		}
	case <-c.exited:
		return exitedEarly()
	case <-ctx.Done():
		c.stop(0, true)
		return nil, context.Cause(ctx)
	}
	p.mu.Lock()
	p.live[c] = struct{}{}
	p.mu.Unlock()
	return c, nil
}

// runTask sends t to c and waits for its result, the child's death, the
// deadline or t.Cancel (SIGTERM to the group, SIGKILL after the grace) or ctx (SIGKILL
// at once). A child that answered correctly goes back to the pool; any
// other ends the child.
// truncated reports whether the task's stdout and stderr lost earlier bytes.
func (p *childPool) runTask(ctx context.Context, t *Task, c *pooledChild, deadline time.Time, envelope []byte, truncated *[2]bool) Result {
	e := p.ps.e
	c.seq++
	seq := c.seq
	frame := taskFrame{
		Type: frameTask, Seq: seq, Queue: t.queue(), Task: t.Message.Task, ID: t.Message.ID,
		Attempt: t.Message.Attempt, Position: int64(t.Message.Position),
	}
	if !deadline.IsZero() {
		frame.Deadline = deadline.UTC().Format(time.RFC3339Nano)
	}
	for _, kv := range tracing.Env(ctx) { // the task span's context, if traced
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case tracing.EnvTraceparent:
			frame.Traceparent = v
		case tracing.EnvTracestate:
			frame.Tracestate = v
		}
	}
	res := Result{ExitCode: -1, PID: c.pid}
	c.frame = appendTaskFrame(c.frame[:0], &frame, envelope)
	buf := c.frame
	if cap(c.frame) > maxKeptFrame {
		c.frame = nil // a large envelope's buffer is not kept for the child's life
	}
	if out, errOut := c.stdout.begin(), c.stderr.begin(); len(out) > 0 || len(errOut) > 0 {
		taskLogger(e.logger, t, c.pid).Info("pooled child output between tasks", "stdout", string(out), "stderr", string(errOut))
	}
	realDeadline := e.realDeadline(deadline)
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		// The child's own timer, reset for each task (a new one was
		// most of the worker's allocations for a pooled task).
		if c.deadline == nil {
			c.deadline = time.NewTimer(time.Until(realDeadline))
		} else {
			c.deadline.Reset(time.Until(realDeadline))
		}
		defer c.deadline.Stop()
		timeout = c.deadline.C
	}

	// end stops the child (after a kill, or asking it to exit) and fills in
	// its output; the child leaves the pool.
	end := func(kill bool) {
		c.stop(e.grace, kill)
		p.discard(c)
		res.Stdout, truncated[0] = c.stdout.take()
		res.Stderr, truncated[1] = c.stderr.take()
	}
	abort := func() Result {
		taskLogger(e.logger, t, c.pid).Warn("aborting task: killing "+pooledGroup, "cause", context.Cause(ctx))
		end(true)
		res.Outcome, res.Reason = OutcomeAborted, "aborted: "+context.Cause(ctx).Error()
		return res
	}
	// terminate sends SIGTERM to the child's group, and SIGKILL after the
	// grace: the end of a task that timed out or was cancelled. The child
	// leaves the pool.
	terminate := func(outcome Outcome) Result {
		forced := false
		switch c.terminate(ctx, taskLogger(e.logger, t, c.pid), outcome, pooledGroup, deadline, e.grace) {
		case termAborted:
			return abort()
		case termOutlived:
			forced = true
		}
		end(true)
		if c.status.err == nil {
			res.ExitCode, res.Signal = exitCodeAndSignal(c.status.status)
		}
		res.Outcome, res.Reason = outcome, stopReason(t, outcome, deadline, pooledGroup, forced, e.grace)
		return res
	}
	timedOut := func() Result { return terminate(OutcomeTimeout) }
	died := func() Result {
		end(true)
		if c.closed.Load() {
			res.Outcome, res.Reason = OutcomeAborted, "aborted: the executor was closed (the worker is stopping)"
			return res
		}
		res.ExitCode, res.Signal = -1, 0
		if c.status.err == nil {
			res.ExitCode, res.Signal = exitCodeAndSignal(c.status.status)
		}
		res.Outcome = OutcomeFailure
		res.Reason = withLastLine("pooled child exited mid-task: "+describeExit(c.status), res.Stderr)
		return res
	}
	violation := func(err error) Result {
		taskLogger(e.logger, t, c.pid).Warn("pooled child broke the protocol: killing it", "error", err)
		end(true)
		res.Outcome, res.Reason = OutcomeFailure, err.Error()
		if !strings.HasPrefix(res.Reason, errProtocol.Error()) {
			res.Reason = errProtocol.Error() + ": " + res.Reason
		}
		return res
	}

	// Send the task. The child read every earlier frame before it
	// answered, so the pipe is empty and a frame of up to a page (the
	// least a pipe holds) is written at once. A larger one may block while
	// the child does not read: then the deadline or ctx ends it.
	if e.beforeStart != nil {
		e.beforeStart()
	}
	var err error
	if len(buf) <= stdinPrefill {
		_, err = c.tasks.Write(buf)
	} else {
		stopAfter := context.AfterFunc(ctx, func() { _ = c.tasks.SetWriteDeadline(time.Now()) })
		err = c.writeFrame(buf, realDeadline)
		stopAfter()
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return abort()
		case ioErrIsTimeout(err):
			return timedOut()
		}
		// EPIPE: the child closed fd 3 or died.
		select {
		case <-c.exited:
			return died()
		case <-time.After(e.grace):
			return violation(fmt.Errorf("%w: the child stopped reading its task descriptor: %v", errProtocol, err))
		}
	}
	if e.lease != nil && !e.lease.Fresh() {
		// As for a per-task process (exec.go): a freeze between AwaitFresh
		// (or a checkout that waited) and the write leaves the lease stale
		// now, and the queue may already run elsewhere. The child goes
		// with the task; the attempt does not count.
		taskLogger(e.logger, t, c.pid).Warn("lease went stale before the task was sent: killing its pooled child's process group")
		end(true)
		res.Outcome, res.Reason = OutcomeAborted, "aborted at start: the lease went stale before the task was sent (the worker was frozen)"
		return res
	}

	var fr frameRead
	select {
	case fr = <-c.results:
	case <-c.exited:
		select { // a result written just before the end still counts
		case fr = <-c.results:
		default:
			return died()
		}
	case <-ctx.Done():
		return abort()
	case <-timeout:
		return timedOut()
	case <-t.Cancel:
		return terminate(OutcomeCancelled)
	}
	if fr.err != nil {
		if errors.Is(fr.err, io.EOF) { // fd 4 closed: usually the child is exiting
			select {
			case <-c.exited:
				return died()
			case <-time.After(e.grace):
				return violation(fmt.Errorf("%w: the child closed its result descriptor mid-task", errProtocol))
			}
		}
		return violation(fr.err)
	}
	rf, err := decodeResult(fr.body, seq)
	if err != nil {
		return violation(err)
	}
	c.takeOutput(&res, truncated)
	switch rf.Outcome {
	case wireSuccess:
		res.Outcome, res.ExitCode, res.Reason = OutcomeSuccess, 0, "pooled child reported success"
	case wireRetry:
		res.Outcome, res.ExitCode, res.Reason = OutcomeRetry, ExitRetry, "retry requested"
	case wireTimeout:
		res.Outcome, res.ExitCode, res.Reason = OutcomeTimeout, exitGoTimeout, "handler failed after its deadline"
	default:
		res.Outcome, res.ExitCode, res.Reason = OutcomeFailure, exitHandlerError, "handler failed"
	}
	if rf.Message != "" {
		res.Reason += ": " + rf.Message
	}
	if c.hasExited() {
		// It answered, then died: the answer stands, the child goes.
		c.stop(e.grace, true)
		p.discard(c)
		return res
	}
	p.checkin(c)
	return res
}
