package executor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// A cancelled per-task process: its group gets SIGTERM (a shell that
// ignores it and its sleeping child are killed at the grace), the outcome is
// cancelled, and no process of the group is left. The task would run 300 s
// otherwise: Execute returning is the observation.
func TestCancelStopsAPerTaskProcessGroup(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{KillGrace: 200 * time.Millisecond})
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	script := writeScript(t, `trap '' TERM
sleep 300 &
echo $$ $! > `+pidFile+`.tmp; mv `+pidFile+`.tmp `+pidFile+`
wait
`)
	task := testTask(t, "hang", command(script))
	task.Timeout = 0
	cancel := make(chan struct{})
	task.Cancel = cancel
	done := make(chan Result, 1)
	go func() { done <- e.Execute(context.Background(), task) }()
	waitForFile(t, pidFile, done)
	close(cancel)
	res := <-done
	if want := "cancelled: sent SIGTERM to its process group, then SIGKILL after 200ms"; res.Outcome != OutcomeCancelled || res.Reason != want {
		t.Fatalf("want cancelled (%s), have %s (%s)", want, res.Outcome, res.Reason)
	}
	for _, pid := range readPIDs(t, pidFile) {
		assertGone(t, pid, "cancelled task or its child")
	}
}

// A cancelled pooled task: its child is stopped with it (the outcome is
// cancelled) and the next task runs in a new child.
func TestCancelStopsAPooledTaskAndItsChild(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{KillGrace: 200 * time.Millisecond})
	route := pooledGo(drover.PoolConfig{})
	pidFile := filepath.Join(t.TempDir(), "pids")
	task := poolTask(t, poolHang, route, 0)
	task.Message.Args = json.RawMessage(strconv.Quote(pidFile))
	task.Timeout = 0
	cancel := make(chan struct{})
	task.Cancel = cancel
	done := make(chan Result, 1)
	go func() { done <- e.Execute(context.Background(), task) }()
	waitForFile(t, pidFile, done)
	close(cancel)
	res := <-done
	if !strings.HasPrefix(res.Reason, "cancelled: sent SIGTERM to its pooled child's process group") || res.Outcome != OutcomeCancelled {
		t.Fatalf("want cancelled, naming the pooled child's group, have %s (%s)", res.Outcome, res.Reason)
	}
	for _, pid := range readPIDs(t, pidFile) {
		assertGone(t, pid, "cancelled pooled child or its grandchild")
	}
	next := e.Execute(context.Background(), poolTask(t, poolEcho, route, 1))
	mustSucceed(t, next)
	if next.PID == res.PID {
		t.Errorf("want the next task in a new child, have the cancelled child %d", next.PID)
	}
}

// A task cancelled before its process started never starts: no pid, the
// outcome cancelled.
func TestCancelBeforeStartStartsNothing(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	marker := filepath.Join(t.TempDir(), "ran")
	task := testTask(t, "never", command("/bin/sh", "-c", "touch "+marker))
	cancel := make(chan struct{})
	close(cancel)
	task.Cancel = cancel
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeCancelled || res.PID != 0 {
		t.Fatalf("want cancelled before start, no pid, have %s pid %d (%s)", res.Outcome, res.PID, res.Reason)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the task ran")
	}
}
