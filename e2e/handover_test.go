package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// Issue 40: a queue that moves for balance (a second worker joins) while a
// long task runs on the first is handed over without killing it: the task,
// longer than the drain timeout and than the task lease's bound, finishes
// once on the first worker, and the queue's next message runs on the
// second. Before, the move drained for the drain timeout, killed the task,
// and the second worker ran it again.
func TestAMoveForBalanceLetsALongTaskFinishOnce(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	dir := filepath.Join(f.dir, "handover")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "executions.log")
	script := taskScript(t, dir, logPath, "8") // > the drain timeout, > the lease bound (T/3)
	queues := []string{"move0", "move1"}
	for _, q := range queues {
		f.createQueue(q, true, []string{script}, func(qc *drover.QueueConfig) { qc.Timeout = drover.Duration(time.Minute) })
	}
	first := f.startWorker("first", "DROVER_WORKER_DRAIN_TIMEOUT=2s")
	ids := f.enqueue(queues, 2)
	waitFor(t, time.Minute, "both tasks in flight on the first worker", func() bool {
		st := f.state("first")
		return st != nil && st.inFlight() == 2
	})
	f.startWorker("second")
	// Sticky balance gives the joining member one of the two queues; the
	// first hands it over once its task has finished.
	var moved string
	waitFor(t, time.Minute, "the second worker to own one queue", func() bool {
		st := f.state("second")
		if st == nil || len(st.Worker.Queues) != 1 {
			return false
		}
		moved = st.Worker.Queues[0].Name
		return true
	})
	marker := f.enqueue([]string{moved}, 1)[moved][0]
	waitFor(t, time.Minute, "the marker to run on the second worker", func() bool {
		for _, e := range readExecutions(t, logPath) {
			if e.id == marker {
				return true
			}
		}
		return false
	})
	for _, q := range queues {
		var runs []execution
		for _, e := range readExecutions(t, logPath) {
			if e.id == ids[q][0] {
				runs = append(runs, e)
			}
		}
		if len(runs) != 1 || runs[0].workerPID != first.cmd.Process.Pid || runs[0].attempt != 0 {
			t.Fatalf("%s (moved: %s): want its long task run once, on attempt 0, by the first worker (pid %d), have %+v",
				q, moved, first.cmd.Process.Pid, runs)
		}
	}
	log, _ := os.ReadFile(first.log)
	if !strings.Contains(string(log), "handing over: waiting for running task") {
		t.Fatalf("want the first worker to log the hand-over it waited for; its log:\n%s", log)
	}
	if strings.Contains(string(log), "drain timeout: killing") {
		t.Fatalf("a planned move kills nothing; the first worker's log:\n%s", log)
	}
}
