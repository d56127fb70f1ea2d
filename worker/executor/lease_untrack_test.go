package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A task killed at its start because the lease went stale is taken out of
// the lease again, as every task that ended is: its group was left tracked,
// so the supervisor would later signal a process group id that is free for
// reuse (the chaos run's worker printed "the worker is gone: SIGTERM to 1
// process groups" at a clean exit, with no task running).
func TestLeaseStaleAtTheStartUntracksTheKilledGroup(t *testing.T) {
	lease, logPath := newTestLease(t, time.Second, 50*time.Millisecond)
	freeze := renewing(t, lease)
	e := newTestExecutor(t, Config{Lease: lease}).(*routeExecutor).exec
	e.beforeStart = func() {
		freeze()
		lease.lastRenew.Store(boottime() - int64(time.Second))
	}
	done := filepath.Join(t.TempDir(), "done")
	res := e.Execute(context.Background(), testTask(t, "stale", command(writeScript(t, "sleep 30\ntouch "+done))))
	if res.Outcome != OutcomeAborted || res.PID == 0 {
		t.Fatalf("want the started task aborted (with its pid), have %s pid %d (%s)", res.Outcome, res.PID, res.Reason)
	}
	lease.Close() // the supervisor signals what is still tracked, then exits
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "the worker is gone") {
		t.Fatalf("the killed task's group %d was still tracked at Close: %q", res.PID, log)
	}
}
