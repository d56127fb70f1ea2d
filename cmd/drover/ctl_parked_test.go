package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// TestCtlJobSaysParkedAndSkipKeepPausedUnparks runs a real worker with an
// ordered queue that parks. `ctl job` shows the parked head as parked (its
// attempt, error and who parked it), not "pending, attempt 0"; a skip with
// --keep-paused leaves the queue paused but parked at nothing, so resume
// runs the next message; a cancelled head that parks reads parked with
// who cancelled it.
func TestCtlJobSaysParkedAndSkipKeepPausedUnparks(t *testing.T) {
	c := newCluster(t)
	pidFile := filepath.Join(t.TempDir(), "hang.pid")
	c.ok("ctl", "queue", "create", "pk", "--ordered", "--on-failure", "park", "--max-attempts", "2",
		"--backoff-base", "10ms", "--backoff-max", "10ms",
		"--task", `fail=/bin/sh -c 'echo boom >&2; exit 3'`, "--task", "ok=/bin/true",
		"--task", fmt.Sprintf(`hang=/bin/sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 300'`, pidFile, pidFile, pidFile))
	c.startWorker("w1")
	c.ok("ctl", "enqueue", "pk", "fail", "--id", "head")
	c.ok("ctl", "enqueue", "pk", "ok", "--id", "next")
	eventually(t, 60*time.Second, func() error {
		if out := c.ok("ctl", "parked", "ls").stdout; !strings.Contains(out, "pk\tat head") {
			return fmt.Errorf("want pk parked at head, have %q", out)
		}
		return nil
	})

	var st drover.JobStatus
	c.okJSON(&st, "ctl", "job", "pk", "head")
	if st.State != drover.JobParked || st.Attempt != 1 || !strings.Contains(st.Error, "max_attempts 2") ||
		st.ExitCode == nil || *st.ExitCode != 3 || st.Parked == nil || st.Parked.By != "worker w1" {
		t.Fatalf("parked head: want parked at attempt 1 (the last of 2), exit 3, parked by worker w1; have %+v", st)
	}
	if out := c.ok("ctl", "job", "pk", "head").stdout; !contains(out, "parked", "PARKED", "by worker w1", "max_attempts 2") {
		t.Fatalf("ctl job table: want the parked state, who parked it and the error, have:\n%s", out)
	}
	if c.okJSON(&st, "ctl", "job", "pk", "next"); st.State != drover.JobPending {
		t.Fatalf("behind the head: want pending, have %+v", st)
	}

	// Skip, kept paused: paused, not parked at the message that left.
	c.ok("ctl", "parked", "skip", "pk", "head", "--keep-paused")
	if out := c.ok("ctl", "parked", "ls").stdout; strings.Contains(out, "pk") {
		t.Fatalf("after skip --keep-paused: want pk parked no more, have %q", out)
	}
	c.fails(exitRefused, []string{"not parked"}, "ctl", "parked", "skip", "pk", "head")
	if c.okJSON(&st, "ctl", "job", "pk", "head"); st.State != drover.JobDead {
		t.Fatalf("skipped head: want dead, have %+v", st)
	}
	var rep statusReport
	if c.okJSON(&rep, "ctl", "status"); len(rep.Queues) != 1 || !rep.Queues[0].Paused {
		t.Fatalf("after skip --keep-paused: want pk still paused, have %+v", rep.Queues)
	}
	c.ok("ctl", "resume", "--queue", "pk")
	eventually(t, 60*time.Second, func() error {
		if c.okJSON(&st, "ctl", "job", "pk", "next"); st.State != drover.JobSucceeded {
			return fmt.Errorf("after resume: want next succeeded, have %+v", st)
		}
		return nil
	})

	// A cancel parks the queue at its head: parked, cancelled by whom.
	c.ok("ctl", "enqueue", "pk", "hang", "--id", "stuck")
	eventually(t, 60*time.Second, func() error {
		if _, err := os.Stat(pidFile); err != nil {
			return err
		}
		if c.okJSON(&st, "ctl", "job", "pk", "stuck"); st.State != drover.JobRunning {
			return fmt.Errorf("want stuck running, have %+v", st)
		}
		return nil
	})
	if out := c.ok("ctl", "cancel", "pk", "stuck").stdout; !strings.Contains(out, "now parked: cancelled by local") {
		t.Fatalf("ctl cancel: want it parked, cancelled by local (the worker's guard's principal), have %q", out)
	}
	c.okJSON(&st, "ctl", "job", "pk", "stuck")
	if st.State != drover.JobParked || st.By != "local" || !strings.HasPrefix(st.Error, "cancelled by local") {
		t.Fatalf("cancelled head: want parked, by local, error \"cancelled by local …\", have %+v", st)
	}
	c.fails(exitRefused, []string{"not running", "parked at it"}, "ctl", "cancel", "pk", "stuck")
}
