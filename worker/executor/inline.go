package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/drover-dev/drover"
	"github.com/hashicorp/go-hclog"
)

// Exit codes of Go handlers, in a "go" child and in Result.ExitCode of an
// inline handler.
const (
	exitHandlerError = 1
	exitHandlerPanic = 2 // as an unrecovered Go panic exits
)

// inlineExecutor runs "inline" routes: the registered Go handler, in the
// worker process. It is opt-in for trusted handlers: a handler cannot be
// killed, so one that ignores its context holds up Execute (and shutdown)
// until it returns, and one that crashes the process (a fatal error, a
// panic in a goroutine of its own) takes the worker down with it. A panic in
// the handler's own goroutine is recovered and reported as a failure.
type inlineExecutor struct {
	clock  drover.Clock
	logger hclog.Logger
}

// Execute implements Executor. The handler's context is cancelled at the
// task's deadline or when ctx is.
func (e *inlineExecutor) Execute(ctx context.Context, t *Task) Result {
	start := e.clock.Now()
	h, ok := drover.LookupHandler(t.Message.Task)
	if !ok {
		return neverRan(start, fmt.Sprintf("no Go handler registered for task %q", t.Message.Task))
	}
	if err := context.Cause(ctx); err != nil {
		r := neverRan(start, "aborted before start: "+err.Error())
		r.Outcome = OutcomeAborted
		return r
	}
	hctx := ctx
	if deadline := deadlineOf(t, start); !deadline.IsZero() {
		// Real time: the handler's context is the same kind of timer as a
		// subprocess's kill timer. Made only when the handler looks at
		// it (lazyDeadline).
		lctx := newLazyDeadline(ctx, time.Now().Add(deadline.Sub(start)))
		defer lctx.release()
		hctx = lctx
	}
	err := callHandler(hctx, h, t.Message)
	res := handlerResult(err, hctx, ctx)
	res.Started = start
	res.Duration = e.clock.Now().Sub(start)
	if res.Outcome != OutcomeSuccess && e.logger.IsWarn() {
		taskLogger(e.logger, t, 0).Warn("inline handler did not succeed", "outcome", res.Outcome, "reason", res.Reason)
	}
	return res
}

// panicError is a recovered handler panic.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// callHandler runs h, turning a panic in its goroutine into a *panicError.
func callHandler(ctx context.Context, h drover.HandlerFunc, m *drover.Message) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return h(ctx, m)
}

// handlerResult classifies a handler's return. hctx is the handler's
// context (with the task's deadline), ctx the caller's (abort). A handler
// that returns nil succeeded even if late; an error after the deadline is a
// timeout, after an abort an abort. Stderr holds the error text (and the
// stack of a panic), as a "go" child writes it.
func handlerResult(err error, hctx, ctx context.Context) Result {
	var res Result
	if err == nil {
		res.Outcome, res.Reason = OutcomeSuccess, "handler returned nil"
		return res
	}
	res.ExitCode = exitHandlerError
	res.Stderr = []byte(err.Error() + "\n")
	var p *panicError
	switch {
	case ctx.Err() != nil:
		res.Outcome, res.Reason = OutcomeAborted, "aborted: "+context.Cause(ctx).Error()
	case errors.As(err, &p):
		res.Outcome, res.ExitCode = OutcomeFailure, exitHandlerPanic
		res.Stderr = append(res.Stderr, p.stack...)
		res.Reason = err.Error()
	case errors.Is(hctx.Err(), context.DeadlineExceeded):
		res.Outcome, res.Reason = OutcomeTimeout, "handler failed after its deadline: "+err.Error()
	case errors.Is(err, drover.ErrRetry):
		res.Outcome, res.ExitCode, res.Reason = OutcomeRetry, ExitRetry, err.Error()
	default:
		res.Outcome, res.Reason = OutcomeFailure, err.Error()
	}
	return res
}
