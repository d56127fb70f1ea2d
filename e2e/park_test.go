package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/execfile"
	"github.com/drover-dev/drover/internal/ops"
)

// failingScript writes a task program that logs "queue id attempt" to
// logPath, then fails when its envelope's args are the JSON string "bad".
func failingScript(t *testing.T, dir, logPath string) string {
	t.Helper()
	p := filepath.Join(dir, "park-task.sh")
	body := fmt.Sprintf("#!/bin/sh\nenv=$(cat)\nprintf '%%s %%s %%s\\n' \"$DROVER_QUEUE\" \"$DROVER_MESSAGE_ID\" \"$DROVER_ATTEMPT\" >> %s\ncase \"$env\" in *'\"args\":\"bad\"'*) echo 'bad args' >&2; exit 1;; esac\n", logPath)
	if err := execfile.Write(p, []byte(body)); err != nil {
		t.Fatal(err)
	}
	return p
}

// runIDs returns the ids of the task log's lines, in order.
func runIDs(logPath string) []string {
	b, _ := os.ReadFile(logPath)
	var ids []string
	for _, line := range strings.Split(string(b), "\n") {
		if fs := strings.Fields(line); len(fs) == 3 {
			ids = append(ids, fs[1])
		}
	}
	return ids
}

// parkedFleet runs one worker process with an ordered queue "pk"
// (on_failure park, 2 attempts, a subprocess per task) and enqueues four
// messages whose second has bad args; it waits for the queue to park at it.
func parkedFleet(t *testing.T) (f *fleet, o *ops.Ops, logPath string, ids []string) {
	t.Helper()
	f = newFleet(t, 10*time.Second)
	logPath = filepath.Join(f.dir, "runs.log")
	f.createQueue("pk", true, []string{failingScript(t, f.dir, logPath)}, func(qc *drover.QueueConfig) {
		qc.MaxAttempts, qc.OnFailure = 2, drover.OnFailurePark
	})
	f.startWorker("pw")
	ctx := context.Background()
	for _, args := range []string{`"ok"`, `"bad"`, `"ok"`, `"ok"`} {
		r, err := f.store.Producer().Enqueue(ctx, &drover.Message{Queue: "pk", Task: "t", Args: []byte(args)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	o, err := ops.New(ops.Config{ZK: f.zk, Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the queue to park at its failed head", func() bool {
		pqs, err := o.Jobs().ParkedQueues(ctx)
		return err == nil && len(pqs) == 1
	})
	pq, err := o.Jobs().ParkedHead(ctx, "pk")
	if err != nil {
		t.Fatal(err)
	}
	if h := pq.Pause.Head; h.ID != ids[1] || h.Attempts != 2 || !strings.Contains(h.Error, "exit") {
		t.Fatalf("parked head: want %s after 2 attempts with its exit, have %+v", ids[1], h)
	}
	if pq.Message == nil || !strings.Contains(string(pq.Message.Envelope), `"bad"`) {
		t.Fatalf("parked head's message: want its envelope with the bad args, have %+v", pq.Message)
	}
	return f, o, logPath, ids
}

// mustCtl runs `drover ctl args...` against the fleet and fails the test
// when it fails.
func (f *fleet) mustCtl(args ...string) string {
	f.t.Helper()
	out, err := f.ctl(nil, args...)
	if err != nil {
		f.t.Fatalf("drover ctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// checkOrder fails unless the runs are want, in order.
func checkOrder(t *testing.T, have, want []string) {
	t.Helper()
	if strings.Join(have, " ") != strings.Join(want, " ") {
		t.Fatalf("runs: want %v, have %v", want, have)
	}
}

// audited reports whether the fleet's audit log holds ctl's action on
// queue pk (the console's target: /queues/pk/parked/retry or skip).
func audited(t *testing.T, o *ops.Ops, action string) bool {
	recs, err := o.Audit().Records(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Action == action && strings.HasPrefix(r.Target, "/queues/pk/parked/") && r.Result == "ok" && r.Via == "ctl" {
			return true
		}
	}
	return false
}

// A parked head retried with edited args runs again (fresh attempts),
// succeeds, and only then do the messages behind it run, in order.
func TestParkedQueueRetryWithEditedArgsKeepsOrder(t *testing.T) {
	f, o, logPath, ids := parkedFleet(t)
	f.mustCtl("parked", "retry", "pk", ids[1], "--args", `"fixed"`)
	waitFor(t, time.Minute, "the rest to run", func() bool { return len(runIDs(logPath)) == 6 })
	checkOrder(t, runIDs(logPath), []string{ids[0], ids[1], ids[1], ids[1], ids[2], ids[3]})
	if !audited(t, o, "parked.retry") {
		t.Fatal("want the retry in the audit log")
	}
	if pqs, _ := o.Jobs().ParkedQueues(context.Background()); len(pqs) != 0 {
		t.Fatalf("after the retry: want no parked queue, have %+v", pqs)
	}
}

// A parked head moved to the dead letters is not run again; the messages
// behind it run, in order, after it was moved.
func TestParkedQueueSkipToDeadLettersThenResume(t *testing.T) {
	f, o, logPath, ids := parkedFleet(t)
	f.mustCtl("parked", "skip", "pk", ids[1], "--keep-paused")
	dls, err := f.store.Dead().DeadLetters(context.Background(), "pk", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || dls[0].ID != ids[1] || !strings.Contains(dls[0].Failure.Reason, "parked") {
		t.Fatalf("dead letters: want %s, moved while parked, have %+v", ids[1], dls)
	}
	checkOrder(t, runIDs(logPath), []string{ids[0], ids[1], ids[1]}) // still paused: nothing behind it ran
	f.mustCtl("resume", "--queue", "pk")
	waitFor(t, time.Minute, "the rest to run", func() bool { return len(runIDs(logPath)) == 5 })
	checkOrder(t, runIDs(logPath), []string{ids[0], ids[1], ids[1], ids[2], ids[3]})
	if !audited(t, o, "parked.skip") {
		t.Fatal("want the skip in the audit log")
	}
}
