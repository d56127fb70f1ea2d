package executor

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/execfile"
)

// newTestExecutor returns New(cfg) or fails the test.
func newTestExecutor(t testing.TB, cfg Config) Executor {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// testTask returns a task for route with a known message.
func testTask(t testing.TB, task string, route drover.TaskRoute) *Task {
	t.Helper()
	m := &drover.Message{
		ID: "01HX-test-" + strconv.Itoa(os.Getpid()), Queue: "emails", Task: task,
		Args: json.RawMessage(`{"to":"a@example.com"}`), Attempt: 2,
		EnqueuedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Position: 1735787045123456,
	}
	env, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("marshal message: %v", err)
	}
	return &Task{Message: m, Envelope: env, Route: route, Timeout: time.Minute}
}

// command is a "command" route.
func command(argv ...string) drover.TaskRoute { return drover.TaskRoute{Command: argv} }

// writeScript writes an executable /bin/sh script (the task program under
// test, never the executor's mechanism) and returns its path.
func writeScript(t testing.TB, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "task.sh")
	if err := execfile.Write(path, []byte("#!/bin/sh\n"+body)); err != nil {
		t.Fatalf("write script: %v", err)
	}
	return path
}

// readPID reads a pid a task wrote to path.
func readPID(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("pid file holds %q, want a pid", b)
	}
	return pid
}

// processGone reports whether pid no longer runs: it does not exist, or it
// is a zombie waiting for a reaper (an orphan's reaper, init, may be slow or
// absent in a container).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// assertGone fails unless pid is gone, allowing time for the kernel to
// deliver the kill and the process to exit (polling, not a timing
// assertion: the 30 s only keeps a broken test from hanging; it was 2 s,
// which a killed -race process on a loaded 2-core machine can take).
func assertGone(t testing.TB, pid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if processGone(pid) {
			return
		}
	}
	syscall.Kill(pid, syscall.SIGKILL) // do not leak it past the test
	t.Errorf("%s (pid %d) still runs after Execute returned", what, pid)
}

// envOf parses KEY=VALUE lines.
func envOf(out []byte) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

// waitForFile waits until a task creates path, failing if the task ends
// first.
func waitForFile(t testing.TB, path string, done <-chan Result) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case res := <-done:
			t.Fatalf("task ended before %s appeared: %s (%s) stderr %q", path, res.Outcome, res.Reason, tail(res.Stderr))
		case <-time.After(5 * time.Millisecond):
		}
	}
}
