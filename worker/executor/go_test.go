package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// goRoute is a "go" route.
var goRoute = drover.TaskRoute{Go: true}

func TestGoChildOutcomes(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	tests := []struct {
		handler   string
		outcome   Outcome
		exitCode  int
		stderrHas string
		reasonHas string
	}{
		{handlerOK, OutcomeSuccess, 0, "", "exit status 0"},
		{handlerRetry, OutcomeRetry, ExitRetry, "upstream busy: drover: retry later", "upstream busy"},
		{handlerFail, OutcomeFailure, 1, "boom: the widget is broken", "exit status 1: boom: the widget is broken"},
		{handlerPanic, OutcomeFailure, 2, "panic: handler lost its mind", "exit status 2"},
	}
	for _, tt := range tests {
		t.Run(tt.handler, func(t *testing.T) {
			t.Parallel()
			task := testTask(t, tt.handler, goRoute)
			res := e.Execute(context.Background(), task)
			if res.Outcome != tt.outcome || res.ExitCode != tt.exitCode {
				t.Fatalf("want %s exit %d, have %s exit %d (%s) stderr %q",
					tt.outcome, tt.exitCode, res.Outcome, res.ExitCode, res.Reason, tail(res.Stderr))
			}
			if !strings.Contains(string(res.Stderr), tt.stderrHas) {
				t.Errorf("stderr: want %q in it, have %q", tt.stderrHas, tail(res.Stderr))
			}
			if !strings.Contains(res.Reason, tt.reasonHas) {
				t.Errorf("reason: want %q in it, have %q", tt.reasonHas, res.Reason)
			}
			if res.PID <= 0 || res.PID == os.Getpid() {
				t.Errorf("pid: want a child's, have %d", res.PID)
			}
		})
	}
}

func TestGoChildGetsTheMessageAndDeadline(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	task := testTask(t, handlerReport, goRoute)
	task.Deadline = time.Now().Add(time.Hour).UTC()
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeSuccess {
		t.Fatalf("outcome: want success, have %s (%s) stderr %q", res.Outcome, res.Reason, tail(res.Stderr))
	}
	want := fmt.Sprintf("id=%s task=%s attempt=2 position=1735787045123456 args={\"to\":\"a@example.com\"} deadline=%s\n",
		task.Message.ID, handlerReport, task.Deadline.Format(time.RFC3339Nano))
	if string(res.Stdout) != want {
		t.Errorf("handler saw:\nwant %q\nhave %q", want, res.Stdout)
	}
}

func TestGoChildDeadline(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{KillGrace: 200 * time.Millisecond})
	for _, handler := range []string{
		handlerWait,     // returns ctx.Err() at the deadline or on SIGTERM
		handlerIgnoreCx, // killed after the grace
	} {
		t.Run(handler, func(t *testing.T) {
			t.Parallel()
			task := testTask(t, handler, goRoute)
			task.Timeout = time.Second
			res := e.Execute(context.Background(), task)
			if res.Outcome != OutcomeTimeout {
				t.Fatalf("outcome: want timeout, have %s (%s) stderr %q", res.Outcome, res.Reason, tail(res.Stderr))
			}
			// However the race between the child's own deadline and the
			// executor's SIGTERM goes, the child is gone afterwards.
			assertGone(t, res.PID, "go child")
			if handler == handlerIgnoreCx && res.Signal == 0 {
				t.Errorf("a handler that ignores its context: want it killed, have exit %d", res.ExitCode)
			}
		})
	}
}

func TestGoChildAbort(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	task := testTask(t, handlerIgnoreCx, goRoute)
	task.Envelope = nil // marshalled from the message
	task.Message.Args = json.RawMessage(strconv.Quote(pidFile))
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan Result, 1)
	go func() { done <- e.Execute(ctx, task) }()
	waitForFile(t, pidFile, done) // abort once the handler runs
	cancel(errors.New("shutting down"))
	res := <-done
	if res.Outcome != OutcomeAborted || !strings.Contains(res.Reason, "shutting down") {
		t.Fatalf("outcome: want aborted by shutting down, have %s (%s)", res.Outcome, res.Reason)
	}
	if pid := readPID(t, pidFile); pid != res.PID {
		t.Errorf("pid: the handler ran in %d, the result says %d", pid, res.PID)
	}
	assertGone(t, res.PID, "go child")
}

func TestGoChildAsUserUnderLimits(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	tests := []struct {
		name   string
		user   string
		limits drover.Limits
		want   string
	}{
		{"limits", "", drover.Limits{OpenFiles: 77}, "uid=0 nofile=77/77\n"},
		{"user", "nobody", drover.Limits{}, "uid=65534 nofile="},
		{"user and limits", "nobody", drover.Limits{OpenFiles: 50}, "uid=65534 nofile=50/50\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := testTask(t, handlerNofile, goRoute)
			task.User, task.Limits = tt.user, tt.limits
			res := e.Execute(context.Background(), task)
			if res.Outcome != OutcomeSuccess {
				t.Fatalf("outcome: want success, have %s (%s) stderr %q", res.Outcome, res.Reason, tail(res.Stderr))
			}
			if !strings.HasPrefix(string(res.Stdout), tt.want) {
				t.Errorf("handler saw: want %q, have %q", tt.want, res.Stdout)
			}
		})
	}
}

func TestGoChildUnknownHandlerFailsBeforeStart(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	res := e.Execute(context.Background(), testTask(t, "worker-test-never-registered", goRoute))
	if res.Outcome != OutcomeFailure || res.PID != 0 || !strings.Contains(res.Reason, "worker-test-never-registered") {
		t.Errorf("want a failure before start naming the task, have %s pid %d (%s)", res.Outcome, res.PID, res.Reason)
	}
}

func TestGoChildRejectsGarbageOnStdin(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	task := testTask(t, handlerOK, goRoute)
	task.Envelope = []byte("not json")
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeFailure || res.ExitCode != exitChildSetup || !strings.Contains(string(res.Stderr), "decode envelope") {
		t.Errorf("want a setup failure (exit %d) about the envelope, have %s exit %d stderr %q",
			exitChildSetup, res.Outcome, res.ExitCode, res.Stderr)
	}
}
