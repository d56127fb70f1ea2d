package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-dev/drover/tools/chaos/check"
)

// TestChaosMinute is the 60-second chaos run of `make test`: the harness,
// the task program and the drover binary are built without -race and run
// as processes, with a
// load sized for a loaded 2-core CI machine. Every fault kind is injected at
// least once; any violated invariant fails the test with the checker's
// report. Real servers are required (the run fails with an install hint
// when redis-server or zookeeper is missing).
func TestChaosMinute(t *testing.T) {
	bin := t.TempDir()
	drover, chaos, task := filepath.Join(bin, "drover"), filepath.Join(bin, "chaos"), filepath.Join(bin, "task")
	for _, b := range []struct{ out, pkg string }{{drover, "../../cmd/drover"}, {chaos, "."}, {task, "./task"}} {
		build := exec.Command("go", "build", "-o", b.out, b.pkg)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	dir := t.TempDir()
	reportPath := filepath.Join(dir, "report.json")
	// The bound only keeps a broken run from hanging the suite.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chaos,
		"-duration", "60s", "-rate", "100", "-queues", "20", "-ordered", "4", "-schedules", "20",
		"-drain", "90s", "-drover", drover, "-task", task, "-dir", filepath.Join(dir, "run"), "-json", reportPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("chaos progress:\n%s", stderr.String())
	t.Logf("chaos report:\n%s", stdout.String())
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		t.Errorf("the chaos run violated invariants (report above; run directory %s)", filepath.Join(dir, "run"))
	default:
		t.Fatalf("the chaos run failed: %v", err)
	}
	b, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatalf("read the report: %v", err)
	}
	var res struct{ Report check.Report }
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("decode the report: %v", err)
	}
	r := res.Report
	if !r.OK() {
		t.Errorf("want no violated invariant, have %v", r.ViolationCounts)
		var logs bytes.Buffer
		if err := violationLogs(&logs, filepath.Join(dir, "run"), r.Violations); err != nil {
			t.Logf("copy the workers' lines about the violations: %v", err)
		}
		t.Logf("the workers' lines about the violated queues (the run directory goes with the test):\n%s", logs.String())
	}
	for _, k := range check.Kinds {
		if r.Faults[k] == 0 {
			t.Errorf("want at least one %s fault injected, have none", k)
		}
	}
	t.Logf("parks: %d (unresolved %d)", r.Parks, r.ParksUnresolved)
	if r.Parks == 0 {
		t.Errorf("want the park queue parked and resolved at least once, have no park")
	}
	if kc := r.KeyChurn; kc == nil || kc.Retirements == 0 || kc.Returns == 0 || kc.Bursts == 0 {
		t.Errorf("want family keys retired and enqueued to again, and a burst of new keys, during the run; have %+v", kc)
	}
	if r.Enqueued == 0 || r.SlotsExpected == 0 || r.Lost != 0 {
		t.Errorf("want messages enqueued and slots fired, none lost; have %d enqueued, %d slots, %d lost", r.Enqueued, r.SlotsExpected, r.Lost)
	}
}
