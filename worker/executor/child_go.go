package executor

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/tracing"
)

// runGoChild is the main of a "go" child: it reads the envelope from stdin,
// runs the handler registered under the task's name with a context that
// ends at DROVER_DEADLINE or on SIGTERM/SIGINT, writes any error (and a
// panic's stack) to stderr, and returns the exit code: 0 for nil,
// ExitRetry for an error wrapping drover.ErrRetry, exitGoTimeout for an
// error after the deadline, exitHandlerPanic for a panic, exitHandlerError
// otherwise, exitChildSetup when it could not run the handler at all.
func runGoChild() int {
	setupFailed := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "drover: go child: "+format+"\n", a...)
		return exitChildSetup
	}
	envelope, err := io.ReadAll(os.Stdin)
	if err != nil {
		return setupFailed("read envelope from stdin: %v", err)
	}
	m, err := drover.DecodeMessage(envelope)
	if err != nil {
		return setupFailed("decode envelope: %v", err)
	}
	if s := os.Getenv(EnvPosition); s != "" {
		if pos, err := strconv.ParseInt(s, 10, 64); err == nil {
			m.Position = drover.Position(pos)
		}
	}
	h, ok := drover.LookupHandler(m.Task)
	if !ok {
		return setupFailed("no Go handler registered for task %q in %s", m.Task, os.Args[0])
	}
	ctx := tracing.FromEnv(context.Background(), os.Getenv) // the task span's context, when traced
	if s := os.Getenv(EnvDeadline); s != "" {
		deadline, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return setupFailed("%s: %v", EnvDeadline, err)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	// SIGTERM is the executor's "time is up": let the handler wind down.
	hctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	res := handlerResult(callHandler(hctx, h, m), ctx, context.Background())
	os.Stderr.Write(res.Stderr)
	if res.Outcome == OutcomeTimeout {
		return exitGoTimeout
	}
	return res.ExitCode
}
