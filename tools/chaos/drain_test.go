package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-dev/drover/tools/chaos/check"
)

// The drain waits for a backlog that keeps shrinking, however long it
// takes, and gives up once it stops shrinking for the stall bound: a slow
// host is waited for, a stuck queue is not.
func TestTheDrainWaitsWhileTheBacklogShrinks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.log")
	fl, err := newFollower(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.close()
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	// Ten messages; one runs every 40 s of the fake clock, but the fifth
	// never does (a stuck queue), so the rest stop at the fourth.
	var enq []check.Enqueued
	for i := range 10 {
		enq = append(enq, check.Enqueued{Queue: "q", ID: string(rune('a' + i)), Position: int64(i + 1)})
	}
	start := time.Unix(1_800_000_000, 0)
	now := start
	fl.now = func() time.Time { return now }
	fl.sleep = func(_ context.Context, d time.Duration) bool {
		before := now
		now = now.Add(d)
		if k := int(now.Sub(start) / (40 * time.Second)); k > int(before.Sub(start)/(40*time.Second)) && k <= 4 {
			m := enq[k-1]
			line := check.FormatExecution(check.Execution{Queue: m.Queue, ID: m.ID, Position: m.Position, WorkerPID: 1, PID: 2, Start: now, End: now})
			if _, err := w.WriteString(line); err != nil {
				t.Fatal(err)
			}
		}
		return true
	}
	// A stall bound of a minute: longer than the 40 s between runs, so the
	// drain goes past the first minute; a deadline far off.
	res := fl.waitAll(context.Background(), enq, nil, time.Minute, start.Add(time.Hour))
	if res.atStart != 10 || res.missing != 6 || !res.stalled {
		t.Fatalf("want 10 missing at the start, 6 at the end and a stall, have %+v", res)
	}
	// It ran past the first minute (waiting for progress) and gave up a
	// minute after the last run (160 s).
	if took := now.Sub(start); took < 220*time.Second || took > 221*time.Second {
		t.Fatalf("want the drain to give up a minute after the last run at 160 s, have it end at %s", took)
	}
}
