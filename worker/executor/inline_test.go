package executor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// inlineRoute is an "inline" route.
var inlineRoute = drover.TaskRoute{Inline: true}

func TestInlineOutcomes(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	tests := []struct {
		handler   string
		outcome   Outcome
		exitCode  int
		reasonHas string
		stderrHas string
	}{
		{handlerNoop, OutcomeSuccess, 0, "returned nil", ""},
		{handlerRetry, OutcomeRetry, ExitRetry, "upstream busy", "upstream busy"},
		{handlerFail, OutcomeFailure, 1, "boom: the widget is broken", "boom: the widget is broken"},
		{handlerPanic, OutcomeFailure, 2, "panic: handler lost its mind", "inline.go"}, // the stack
		{"worker-test-never-registered", OutcomeFailure, -1, "no Go handler registered", ""},
	}
	for _, tt := range tests {
		t.Run(tt.handler, func(t *testing.T) {
			t.Parallel()
			res := e.Execute(context.Background(), testTask(t, tt.handler, inlineRoute))
			if res.Outcome != tt.outcome || res.ExitCode != tt.exitCode {
				t.Fatalf("want %s exit %d, have %s exit %d (%s)", tt.outcome, tt.exitCode, res.Outcome, res.ExitCode, res.Reason)
			}
			if !strings.Contains(res.Reason, tt.reasonHas) {
				t.Errorf("reason: want %q in it, have %q", tt.reasonHas, res.Reason)
			}
			if !strings.Contains(string(res.Stderr), tt.stderrHas) {
				t.Errorf("stderr: want %q in it, have %q", tt.stderrHas, tail(res.Stderr))
			}
			if res.PID != 0 {
				t.Errorf("pid: want 0 in process, have %d", res.PID)
			}
		})
	}
}

func TestInlineDeadlineAndAbort(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})

	task := testTask(t, handlerWait, inlineRoute)
	task.Timeout = 50 * time.Millisecond
	if res := e.Execute(context.Background(), task); res.Outcome != OutcomeTimeout {
		t.Errorf("past its deadline: want timeout, have %s (%s)", res.Outcome, res.Reason)
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("session lost"))
	if res := e.Execute(ctx, testTask(t, handlerWait, inlineRoute)); res.Outcome != OutcomeAborted {
		t.Errorf("cancelled: want aborted, have %s (%s)", res.Outcome, res.Reason)
	}

	ctx, cancel = context.WithCancelCause(context.Background())
	done := make(chan Result, 1)
	go func() { done <- e.Execute(ctx, testTask(t, handlerWait, inlineRoute)) }()
	cancel(errors.New("session lost"))
	if res := <-done; res.Outcome != OutcomeAborted || !strings.Contains(res.Reason, "session lost") {
		t.Errorf("cancelled while running: want aborted by session lost, have %s (%s)", res.Outcome, res.Reason)
	}
}

func TestRouteMustSetExactlyOneWay(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	for _, r := range []drover.TaskRoute{
		{},
		{Inline: true, Go: true},
		{Command: []string{"true"}, Inline: true},
	} {
		res := e.Execute(context.Background(), testTask(t, handlerNoop, r))
		if res.Outcome != OutcomeFailure || res.PID != 0 || !strings.Contains(res.Reason, "exactly one") {
			t.Errorf("route %+v: want a failure before start, have %s (%s)", r, res.Outcome, res.Reason)
		}
	}
	if res := e.Execute(context.Background(), &Task{Route: inlineRoute}); res.Outcome != OutcomeFailure {
		t.Errorf("no message: want failure, have %s", res.Outcome)
	}
}
