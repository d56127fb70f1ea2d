package executor

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// The Python module python/drover_pool.py: its own unit tests, and real
// pooled Python children run by the executor.

// pythonDir is the repository's python/ directory.
func pythonDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "python")
}

// python3 returns the interpreter or fails the test with an install hint.
func python3(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed for the pooled Python child's tests: apt-get install python3 (%v)", err)
	}
	return p
}

func TestPythonModuleUnitTests(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(python3(t), "-m", "unittest", "-v", "test_drover_pool")
	cmd.Dir = pythonDir(t)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nOK") {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
}

// pythonTasks is a pooled Python program with one handler per case.
const pythonTasks = `import os, sys, time
import drover_pool

def echo(envelope, ctx):
    print("hello", envelope["args"]["to"], "attempt", ctx.attempt, "queue", ctx.queue)
    print("to stderr", file=sys.stderr)

def retry(envelope, ctx):
    raise drover_pool.Retry("not uploaded yet")

def fail(envelope, ctx):
    raise ValueError("width must be > 0")

def garbage(envelope, ctx):
    os.write(4, b"not a frame at all")

def crash(envelope, ctx):
    sys.stderr.write("segfault imminent\n")
    sys.stderr.flush()
    os._exit(7)

def hang(envelope, ctx):
    time.sleep(3600)

drover_pool.serve({"echo": echo, "retry": retry, "fail": fail, "garbage": garbage, "crash": crash, "hang": hang})
`

// pooledPython returns a pooled route running pythonTasks.
func pooledPython(t testing.TB) drover.TaskRoute {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tasks.py")
	if err := os.WriteFile(path, []byte(pythonTasks), 0o644); err != nil {
		t.Fatal(err)
	}
	return drover.TaskRoute{
		Command: []string{python3(t), path},
		Env:     map[string]string{"PYTHONPATH": pythonDir(t)},
		Pool:    &drover.PoolConfig{MaxTasksPerChild: 100},
	}
}

func TestPoolPythonChild(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledPython(t)
	run := func(task string, n int) Result {
		return e.Execute(context.Background(), poolTask(t, task, route, n))
	}
	first := run("echo", 0)
	mustSucceed(t, first)
	if want := "hello a@example.com attempt 0 queue emails\n"; string(first.Stdout) != want {
		t.Errorf("stdout: want %q, have %q", want, first.Stdout)
	}
	if want := "to stderr\n"; string(first.Stderr) != want {
		t.Errorf("stderr: want %q, have %q", want, first.Stderr)
	}
	tests := []struct {
		task      string
		outcome   Outcome
		reasonHas string
		sameChild bool
	}{
		{"retry", OutcomeRetry, "retry requested: not uploaded yet", true},
		{"fail", OutcomeFailure, "handler failed: ValueError: width must be > 0", true},
		{"missing", OutcomeFailure, "no Python handler for task 'missing'", true},
		{"garbage", OutcomeFailure, "protocol violation: frame length", false},
		{"crash", OutcomeFailure, "pooled child exited mid-task: exit status 7: segfault imminent", false},
	}
	for i, tt := range tests {
		res := run(tt.task, i+1)
		if res.Outcome != tt.outcome || !strings.Contains(res.Reason, tt.reasonHas) {
			t.Errorf("%s: want %s with %q, have %s (%s)", tt.task, tt.outcome, tt.reasonHas, res.Outcome, res.Reason)
		}
		if !tt.sameChild {
			assertGone(t, res.PID, "replaced Python child")
		}
		next := run("echo", 100+i)
		if next.Outcome != OutcomeSuccess {
			t.Fatalf("after %s: want the next task to succeed, have %s (%s)", tt.task, next.Outcome, next.Reason)
		}
		if (next.PID == res.PID) != tt.sameChild {
			t.Errorf("after %s: child kept: want %v, have pid %d then %d", tt.task, tt.sameChild, res.PID, next.PID)
		}
	}
}

func TestPoolPythonTimeoutKillsTheChild(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledPython(t)
	warmed := e.Execute(context.Background(), poolTask(t, "echo", route, 0))
	mustSucceed(t, warmed)
	task := poolTask(t, "hang", route, 1)
	task.Timeout = time.Second
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeTimeout || res.PID != warmed.PID {
		t.Fatalf("want a timeout in the warm child %d, have %s in %d (%s)", warmed.PID, res.Outcome, res.PID, res.Reason)
	}
	assertGone(t, res.PID, "timed-out Python child")
	next := e.Execute(context.Background(), poolTask(t, "echo", route, 2))
	mustSucceed(t, next)
	if next.PID == res.PID {
		t.Errorf("want a fresh child after the timeout, have %d again", next.PID)
	}
}

func TestPoolChildThatIsNoPoolChildFailsWithItsStderr(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := drover.TaskRoute{Command: []string{writeScript(t, "echo 'I speak no protocol' >&2; exit 2")}, Pool: &drover.PoolConfig{}}
	res := e.Execute(context.Background(), poolTask(t, "x", route, 0))
	if res.Outcome != OutcomeFailure || !strings.Contains(res.Reason, "exited before it was ready: exit status 2: I speak no protocol") {
		t.Errorf("want a start failure with the child's exit and stderr, have %s (%s)", res.Outcome, res.Reason)
	}
}

// TestExamplePoolQueue runs the example queue config's pooled routes
// (examples/pool-queue.json) with the repository's paths.
func TestExamplePoolQueue(t *testing.T) {
	t.Parallel()
	repo := filepath.Join(pythonDir(t), "..")
	data, err := os.ReadFile(filepath.Join(repo, "examples", "pool-queue.json"))
	if err != nil {
		t.Fatal(err)
	}
	var qc drover.QueueConfig
	if err := json.Unmarshal(data, &qc); err != nil {
		t.Fatalf("examples/pool-queue.json: %v", err)
	}
	if err := qc.Validate(); err != nil {
		t.Fatalf("examples/pool-queue.json: %v", err)
	}
	e, _ := newPoolExecutor(t, Config{})
	for _, tc := range []struct {
		task    string
		attempt int
		outcome Outcome
		stdout  string
	}{
		{"checksum", 0, OutcomeSuccess, "sha256('a@example.com')"},
		{"flaky", 0, OutcomeRetry, ""},
		{"flaky", 1, OutcomeSuccess, "succeeded on attempt 1"},
	} {
		route, ok := qc.Route(tc.task)
		if !ok || route.Pool == nil || len(route.Command) != 2 {
			t.Fatalf("%s: want a pooled python3 route, have %+v", tc.task, route)
		}
		route.Command = []string{python3(t), filepath.Join(repo, "examples", "tasks", filepath.Base(route.Command[1]))}
		route.Env = map[string]string{"PYTHONPATH": pythonDir(t)}
		task := poolTask(t, tc.task, route, tc.attempt)
		task.Message.Args = json.RawMessage(`{"text":"a@example.com"}`)
		task.Message.Attempt = tc.attempt
		res := e.Execute(context.Background(), task)
		if res.Outcome != tc.outcome || !strings.Contains(string(res.Stdout), tc.stdout) {
			t.Errorf("%s attempt %d: want %s with stdout %q, have %s (%s) stdout %q", tc.task, tc.attempt, tc.outcome, tc.stdout, res.Outcome, res.Reason, res.Stdout)
		}
	}
}
