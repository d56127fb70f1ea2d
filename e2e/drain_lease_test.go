package e2e

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A SIGTERM drains: a task longer than the task lease's bound (a third of
// the session timeout) but shorter than the drain timeout finishes, runs
// once, and the worker exits after it (DESIGN.md §11, "Stop"). Until the
// lease was renewed through the drain, the lease fired T/3 after the
// signal and killed the task, which then ran again on the next owner.
func TestSigtermLetsATaskLongerThanTheLeaseBoundFinish(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	dir := filepath.Join(f.dir, "drain")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "executions.log")
	script := taskScript(t, dir, logPath, "6")
	f.createQueue("drain0", true, []string{script}, nil)
	leaving := f.startWorker("leaving", "DROVER_WORKER_DRAIN_TIMEOUT=20s")
	ids := f.enqueue([]string{"drain0"}, 1)["drain0"]
	waitFor(t, time.Minute, "the task in flight on the leaving worker", func() bool {
		st := f.state("leaving")
		return st != nil && st.inFlight() > 0
	})
	leaving.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-leaving.done:
	case <-time.After(time.Minute):
		t.Fatal("the leaving worker did not exit")
	}
	// The task wrote its line at its end, under the leaving worker, on its
	// first attempt: it was not killed.
	var mine []execution
	for _, e := range readExecutions(t, logPath) {
		if e.id == ids[0] {
			mine = append(mine, e)
		}
	}
	if len(mine) != 1 || mine[0].workerPID != leaving.cmd.Process.Pid || mine[0].attempt != 0 {
		log, _ := os.ReadFile(leaving.log)
		t.Fatalf("want the task finished once by the leaving worker (pid %d) on attempt 0 before it exited, have %+v; its log:\n%s",
			leaving.cmd.Process.Pid, mine, log)
	}
	// Its offset was committed: a marker enqueued behind it on the ordered
	// queue runs on the next owner, and the task does not run again first.
	f.startWorker("next")
	marker := f.enqueue([]string{"drain0"}, 1)["drain0"][0]
	waitFor(t, time.Minute, "the marker to run on the next owner", func() bool {
		for _, e := range readExecutions(t, logPath) {
			if e.id == marker {
				return true
			}
		}
		return false
	})
	runs := 0
	for _, e := range readExecutions(t, logPath) {
		if e.id == ids[0] {
			runs++
		}
	}
	if runs != 1 {
		t.Fatalf("the drained task ran %d times; a graceful stop repeats nothing", runs)
	}
}
