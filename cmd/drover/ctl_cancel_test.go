package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
)

// cancelPoolTasks is a pooled Python child whose task writes its pid to
// the file named by its args and sleeps 300 s.
const cancelPoolTasks = `import os, time
import drover_pool

def hang(envelope, ctx):
    path = envelope["args"]
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(path + ".tmp", path)
    time.sleep(300)

drover_pool.serve({"phang": hang})
`

// TestCtlCancelStopsRunningTasksRecordsWhoAndAudits runs a real worker
// with a per-task process and a pooled child, each sleeping 300 s, and
// cancels both with `ctl cancel`: each process exits (observed, not timed:
// ctl waits for the record, and the task would otherwise run 300 s), the
// job reads dead with "cancelled by" and who, and the audit log holds each
// cancel. Cancelling messages that do not run is refused (exit 5) with
// where they are, and audited too.
func TestCtlCancelStopsRunningTasksRecordsWhoAndAudits(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed: apt-get install python3 (%v)", err)
	}
	pythonPath, err := filepath.Abs(filepath.Join("..", "..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t)
	c.env = append(c.env, "PYTHONPATH="+pythonPath)
	dir := t.TempDir()
	script := filepath.Join(dir, "tasks.py")
	if err := os.WriteFile(script, []byte(cancelPoolTasks), 0o644); err != nil {
		t.Fatal(err)
	}
	perTaskPID := filepath.Join(dir, "per-task.pid")
	c.ok("ctl", "queue", "create", "cq",
		"--task", fmt.Sprintf(`hang=/bin/sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 300'`, perTaskPID, perTaskPID, perTaskPID),
		"--task", "phang="+python+" "+script, "--pool", "phang")
	c.startWorker("w1")

	// Not running: a delayed message, an unknown id. Refused, saying where.
	c.ok("ctl", "enqueue", "cq", "hang", "--id", "later", "--in", "1h")
	c.fails(5, []string{"not running", "delayed"}, "ctl", "cancel", "cq", "later")
	c.fails(5, []string{"not running", "no such message"}, "ctl", "cancel", "cq", "nobody")

	pooledPID := filepath.Join(dir, "pooled.pid")
	c.ok("ctl", "enqueue", "cq", "hang", "--id", "per-task")
	c.ok("ctl", "enqueue", "cq", "phang", "--id", "pooled", "--args", strconv.Quote(pooledPID))
	for _, tc := range []struct{ id, pidFile string }{{"per-task", perTaskPID}, {"pooled", pooledPID}} {
		var pid int
		eventually(t, 60*time.Second, func() error {
			b, err := os.ReadFile(tc.pidFile)
			if err != nil {
				return fmt.Errorf("%s has not written its pid yet (%v)", tc.id, err)
			}
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
			return err
		})
		eventually(t, 60*time.Second, func() error { // the owner sees it running
			var st drover.JobStatus
			c.okJSON(&st, "ctl", "job", "cq", tc.id)
			if st.State != drover.JobRunning {
				return fmt.Errorf("%s: want running, have %+v", tc.id, st)
			}
			return nil
		})
		out := c.ok("ctl", "cancel", "cq", tc.id).stdout
		if !strings.Contains(out, "now dead") || !strings.Contains(out, "cancelled by") {
			t.Fatalf("ctl cancel %s: want it dead and cancelled by someone, have %q", tc.id, out)
		}
		if err := syscall.Kill(pid, 0); err == nil && !zombie(pid) {
			t.Fatalf("%s: process %d still runs after the cancel's record was written", tc.id, pid)
		}
		var st drover.JobStatus
		c.okJSON(&st, "ctl", "job", "cq", tc.id)
		if st.State != drover.JobDead || st.By != "local" || !strings.HasPrefix(st.Error, "cancelled by local (dead-lettered)") {
			t.Fatalf("%s: want dead, by local (the worker's guard's principal, not ctl's claim), error \"cancelled by local …\", have %+v", tc.id, st)
		}
	}
	// Finished now: refused, saying so.
	c.fails(5, []string{"not running", "finished: dead"}, "ctl", "cancel", "cq", "per-task")

	o, err := ops.New(ops.Config{ZK: c.session(), Store: c.store()})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := o.Audit().Records(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	byWorker := 0 // the owner's own records: its guard's principal, ctl's name only as a claim
	for _, r := range recs {
		if r.Action == "job.cancel" && r.Who == operator() {
			seen[fmt.Sprintf("%s %d", r.Target, r.Status)]++
		}
		if r.Action == "job.cancel" && r.Who == "local" && r.Via == "admin loopback" && r.Status == 200 && strings.Contains(r.Detail, "for="+operator()+" (as the caller says)") {
			byWorker++
		}
	}
	if byWorker != 2 {
		t.Errorf("audit: want the worker's job.cancel record of each of the 2 cancels, have %d in %+v", byWorker, recs)
	}
	for _, want := range []string{"/queues/cq/running/per-task/cancel 200", "/queues/cq/running/pooled/cancel 200",
		"/queues/cq/running/later/cancel 409", "/queues/cq/running/nobody/cancel 409", "/queues/cq/running/per-task/cancel 409"} {
		if seen[want] != 1 {
			t.Errorf("audit: want one job.cancel record %q, have %v", want, seen)
		}
	}
}

// zombie reports whether pid has exited and waits for its reaper.
func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}
