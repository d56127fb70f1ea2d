package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-dev/drover"
)

// Issue 41: a job that finished while an older message of its queue still
// runs reads succeeded in every view (ctl job, the Go client, the HTTP
// API), not "pending, ahead: 1" until the older message ends. The report
// saw a finished job read pending for three minutes behind a long retry.
// Here the older message blocks until the test lets it go, so the finished
// job is read while it still runs.
func TestAJobFinishedBehindARunningOneReadsSucceeded(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	hold := fmt.Sprintf(`hold=/bin/sh -c 'while [ ! -e %s ]; do sleep 0.05; done'`, goFile)
	c.ok("ctl", "queue", "create", "behind", "--concurrency", "2", "--task", hold, "--task", "quick=/bin/true")
	c.startWorker("w1")
	v := newJobViews(c)
	c.ok("ctl", "enqueue", "behind", "hold", "--id", "older")
	v.waitState("behind", "older", drover.JobRunning)
	c.ok("ctl", "enqueue", "behind", "quick", "--id", "later")
	v.waitState("behind", "later", drover.JobSucceeded)
	if s := v.status("behind", "older"); s.State != drover.JobRunning {
		t.Fatalf("the older job should still run while the later one reads succeeded, have %+v", s)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	v.waitState("behind", "older", drover.JobSucceeded)
	v.waitState("behind", "later", drover.JobSucceeded)
}
