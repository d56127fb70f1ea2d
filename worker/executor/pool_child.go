package executor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/tracing"
)

// The Go pooled child: the worker binary re-executed with
// DROVER_CHILD=gopool serves the handlers registered with drover.Register,
// one task frame after another, until its task descriptor ends
// (docs/process-pool.md).

// childModeGoPool and childArgGoPool: the mode and argv[1] of a Go pooled
// child.
const (
	childModeGoPool = "gopool"
	childArgGoPool  = "drover-child-gopool"
)

// runGoPoolChild is the main of a Go pooled child. It returns 0 when the
// worker closed the task descriptor, 143 after SIGTERM (the worker's "time
// is up"; the running handler's context is cancelled first), and
// exitChildSetup when it cannot speak the protocol.
func runGoPoolChild() int {
	setupFailed := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "drover: go pooled child: "+format+"\n", a...)
		return exitChildSetup
	}
	if v := os.Getenv(EnvPoolProtocol); v != strconv.Itoa(poolProtocol) {
		return setupFailed("%s=%q: want %d", EnvPoolProtocol, v, poolProtocol)
	}
	os.Unsetenv(EnvPoolProtocol) // a task that runs the binary again is no pooled child
	// The protocol's descriptors are this process's: a program a handler
	// starts must not inherit them (os/exec passes on every descriptor
	// without close-on-exec, and fds 3 and 4 came from the worker
	// without it).
	syscall.CloseOnExec(poolTaskFD)
	syscall.CloseOnExec(poolResultFD)
	tasks := os.NewFile(poolTaskFD, "drover-tasks")
	results := os.NewFile(poolResultFD, "drover-results")
	if tasks == nil || results == nil {
		return setupFailed("descriptors %d and %d are not open", poolTaskFD, poolResultFD)
	}
	s := &goPoolServer{results: results}
	if err := s.send(readyFrame{Type: frameReady, Protocol: poolProtocol}); err != nil {
		return setupFailed("write ready frame: %v", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		s.terminate()
	}()
	var buf []byte
	in := bufio.NewReaderSize(tasks, 16<<10)
	var yielded time.Time
	for {
		body, err := readFrame(in, buf, 1<<31-1)
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			return setupFailed("read task frame: %v", err)
		}
		buf = body
		var f taskFrame
		if err := decodeTaskFrame(body, &f); err != nil || f.Type != frameTask {
			return setupFailed("want a task frame, have %q (%v)", clip(body, 80), err)
		}
		r := s.serve(&f)
		s.frame = appendResultFrame(s.frame[:0], &r)
		if _, err := s.results.Write(s.frame); err != nil {
			return setupFailed("write result frame: %v", err)
		}
		if s.terminating() {
			return 128 + int(syscall.SIGTERM)
		}
		if now := time.Now(); now.Sub(yielded) >= yieldEvery {
			runtime.Gosched()
			yielded = now
		}
	}
}

// yieldEvery is how often the task loop passes through the scheduler.
// This goroutine alternates a blocking read with a task and is otherwise
// never rescheduled; the runtime's monitor then takes it for one that has
// run for more than 10 ms and takes its P away at every read, so each
// task woke two more threads (the monitor, and one to run the P) — four
// futex calls and a nanosleep a task. A yield (which wakes one thread)
// every few milliseconds keeps the goroutine's scheduling tick fresh.
const yieldEvery = 5 * time.Millisecond

// goPoolServer runs one task at a time and remembers how to cancel it.
type goPoolServer struct {
	results *os.File
	frame   []byte

	mu     sync.Mutex
	cancel context.CancelFunc // the running task's; nil between tasks
	term   bool
}

// send writes one frame to the result descriptor.
func (s *goPoolServer) send(v any) error {
	var err error
	if s.frame, err = appendFrame(s.frame[:0], v); err != nil {
		return err
	}
	_, err = s.results.Write(s.frame)
	return err
}

// terminate handles SIGTERM: cancel the running handler, or exit at once
// between tasks.
func (s *goPoolServer) terminate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.term = true
	if s.cancel == nil {
		os.Exit(128 + int(syscall.SIGTERM))
	}
	s.cancel()
}

func (s *goPoolServer) terminating() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.term
}

// expired is a context whose deadline has passed.
var expired, _ = context.WithDeadline(context.Background(), time.Time{})

// serve runs the handler for f and returns its result frame. A handler's
// error (and a panic's stack) also go to stderr, as a per-task child
// writes them.
func (s *goPoolServer) serve(f *taskFrame) resultFrame {
	out := resultFrame{Type: frameResult, Seq: f.Seq}
	m, err := drover.DecodeMessage(f.Envelope)
	if err != nil {
		out.Outcome, out.Message = wireFailure, fmt.Sprintf("decode envelope: %v", err)
		return out
	}
	m.Position = drover.Position(f.Position)
	h, ok := drover.LookupHandler(m.Task)
	if !ok {
		out.Outcome, out.Message = wireFailure, fmt.Sprintf("no Go handler registered for task %q in %s", m.Task, os.Args[0])
		return out
	}
	// The task span's context, when traced, as a per-task child reads it
	// from TRACEPARENT and TRACESTATE.
	ctx := tracing.FromEnv(context.Background(), func(k string) string {
		switch k {
		case tracing.EnvTraceparent:
			return f.Traceparent
		case tracing.EnvTracestate:
			return f.Tracestate
		}
		return ""
	})
	// One context per task, ended by its deadline or by SIGTERM (a
	// cancelCtx inside a timerCtx cost an allocation of each, a map and
	// a channel per task).
	var (
		deadline      time.Time
		hctx          context.Context
		cancelHandler context.CancelFunc
	)
	if f.Deadline != "" {
		if deadline, err = time.Parse(time.RFC3339Nano, f.Deadline); err != nil {
			out.Outcome, out.Message = wireFailure, fmt.Sprintf("task frame deadline %q: %v", f.Deadline, err)
			return out
		}
		// Made when the handler first looks at it (lazyDeadline): a
		// handler that does its work and returns costs no timer.
		lctx := newLazyDeadline(ctx, deadline)
		hctx, cancelHandler = lctx, lctx.release
	} else {
		hctx, cancelHandler = context.WithCancel(ctx)
	}
	defer cancelHandler()
	s.mu.Lock()
	if s.term {
		cancelHandler()
	}
	s.cancel = cancelHandler
	s.mu.Unlock()

	herr := callHandler(hctx, h, m)
	// verdict says whether the deadline passed; handlerResult looks at
	// it only for an error (a handler's success asks nothing of its
	// context, which stays unmade when the handler never looked).
	verdict := hctx
	if herr != nil && errors.Is(hctx.Err(), context.Canceled) && !deadline.IsZero() && !time.Now().Before(deadline) {
		// SIGTERM ended the context first, but the deadline passed
		// before the handler returned: a timeout, as it is without
		// SIGTERM.
		verdict = expired
	}
	res := handlerResult(herr, verdict, context.Background())

	s.mu.Lock()
	s.cancel = nil
	s.mu.Unlock()
	if len(res.Stderr) > 0 {
		os.Stderr.Write(res.Stderr)
	}
	switch res.Outcome {
	case OutcomeSuccess:
		out.Outcome = wireSuccess
	case OutcomeRetry:
		out.Outcome, out.Message = wireRetry, res.Reason
	case OutcomeTimeout:
		out.Outcome, out.Message = wireTimeout, strings.TrimPrefix(res.Reason, "handler failed after its deadline: ")
	default:
		out.Outcome, out.Message = wireFailure, res.Reason
	}
	return out
}
