package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/testing/retiretest"
)

// statusQueues returns the queues `drover ctl status -o json` lists.
func (f *fleet) statusQueues() map[string]bool {
	f.t.Helper()
	var rep struct {
		Queues []struct {
			Queue string `json:"queue"`
		} `json:"queues"`
	}
	out := f.mustCtl("status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		f.t.Fatalf("ctl status -o json: %v\n%s", err, out)
	}
	qs := map[string]bool{}
	for _, q := range rep.Queues {
		qs[q.Queue] = true
	}
	return qs
}

// runsOf counts the runs of queue q in the task log.
func runsOf(t *testing.T, logPath, q string) int {
	n := 0
	for _, e := range readExecutions(t, logPath) {
		if e.queue == q {
			n++
		}
	}
	return n
}

// A family key that retired (its registrar's clock moved past
// retire_after) is listed by neither `ctl status -o json`, the console's
// find and counts, nor a bulk action, and has left the Redis queue set;
// a later enqueue to it runs again, and it is listed again.
func TestRetiredFamilyKeyLeavesNoGhostAndComesBack(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	logPath := filepath.Join(f.dir, "runs.log")
	script := taskScript(t, f.dir, logPath, "")
	f.mustCtl("family", "create", "customers", "--prefix", "cust-", "--task", "*="+script, "--retire-after", "1h")
	f.createQueue("plain", false, []string{script}, nil)
	f.startWorker("fw")
	c := f.startConsole(t)
	ctx := context.Background()
	// A registrar of the test's, on a clock it moves: the worker's runs
	// on the real one, where an hour is an hour.
	reg := retiretest.Start(t, f.zk, f.store)

	if _, err := f.store.Producer().Enqueue(ctx, &drover.Message{Queue: "cust-old", Task: "t"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "cust-old's first message to run", func() bool { return ranIn(t, logPath, "cust-old") })
	if !f.statusQueues()["cust-old"] {
		t.Fatal("ctl status before the retire: want cust-old listed")
	}

	reg.Clock.Advance(2 * time.Hour)
	reg.WaitRetired(t, "cust-old")
	reg.Stop() // its clock would retire the key again as soon as it is idle

	if qs := f.statusQueues(); qs["cust-old"] || !qs["plain"] || len(qs) != 1 {
		t.Fatalf("ctl status -o json after the retire: want plain alone, have %v", qs)
	}
	viewer, operator := c.tokens[auth.Viewer], c.tokens[auth.Operator]
	code, body := get(t, c.url+"/api/v1/find?match=cust-", viewer)
	var pg ops.QueuePage
	if err := json.Unmarshal([]byte(body), &pg); code != 200 || err != nil || pg.Total != 0 {
		t.Fatalf("console find cust- after the retire: want nothing, have %d %s", code, body)
	}
	// The overview is the console's fleet sample, taken in the background:
	// wait for a sample after the retire.
	waitFor(t, time.Minute, "the console's overview to count plain alone", func() bool {
		code, body := get(t, c.url+"/api/v1/overview", viewer)
		var ov struct {
			Totals ops.Totals `json:"totals"`
		}
		return json.Unmarshal([]byte(body), &ov) == nil && code == 200 && ov.Totals.Queues == 1
	})
	if code, body := send(t, "POST", c.url+"/api/v1/bulk/pause", operator, `{"match":"cust-"}`); code != http.StatusNotFound {
		t.Fatalf("bulk pause cust- after the retire: want 404 (nothing selected), have %d %s", code, body)
	}
	if listed, err := f.store.Inspector().QueueKnown(ctx, "cust-old"); err != nil || listed {
		t.Fatalf("after the retire: want cust-old out of the Redis queue set, have %v, %v", listed, err)
	}

	// Back: this producer listed cust-old before, so the worker's
	// registrar lists it again when it registers it.
	if _, err := f.store.Producer().Enqueue(ctx, &drover.Message{Queue: "cust-old", Task: "t"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "cust-old's message after the retire to run", func() bool { return runsOf(t, logPath, "cust-old") == 2 })
	waitFor(t, time.Minute, "cust-old to be listed again", func() bool {
		listed, err := f.store.Inspector().QueueKnown(ctx, "cust-old")
		return err == nil && listed && f.statusQueues()["cust-old"]
	})
}
