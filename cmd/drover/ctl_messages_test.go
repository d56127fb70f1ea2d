package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/scheduler"
)

func TestCtlMessagesRunNowAndTrigger(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "m")
	st := c.store()
	ctx := context.Background()
	p1, err := st.Producer().Enqueue(ctx, &drover.Message{Queue: "m", Task: "now", Args: []byte(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	later, err := st.Producer().EnqueueIn(ctx, &drover.Message{Queue: "m", Task: "later"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	var pending []ops.Message
	c.okJSON(&pending, "ctl", "messages", "ls", "m")
	if len(pending) != 1 || pending[0].ID != p1.ID || pending[0].Position != p1.Position {
		t.Fatalf("pending: want %s at %d, have %+v", p1.ID, p1.Position, pending)
	}
	if out := c.ok("ctl", "messages", "ls", "m", "--state", "delayed").stdout; !strings.Contains(out, later.ID) || !strings.Contains(out, "later") {
		t.Fatalf("delayed table: want %s with task later, have:\n%s", later.ID, out)
	}
	var one ops.Message
	c.okJSON(&one, "ctl", "messages", "show", "m", later.ID)
	if one.State != "delayed" || one.Due == nil {
		t.Fatalf("show: want a delayed message with its due time, have %+v", one)
	}
	c.fails(exitNotFound, []string{"not found"}, "ctl", "messages", "show", "m", "nope")
	c.fails(exitNotFound, []string{"not found"}, "ctl", "messages", "ls", "nosuch")
	c.fails(exitUsage, []string{"--state"}, "ctl", "messages", "ls", "m", "--state", "soon")
	c.fails(exitUsage, []string{"limit"}, "ctl", "messages", "ls", "m", "--limit", "0")

	// run-now moves the delayed job behind the pending one.
	if out := c.ok("ctl", "run-now", "m", later.ID).stdout; !strings.Contains(out, "moved "+later.ID) {
		t.Fatalf("run-now: want a moved line, have %q", out)
	}
	c.okJSON(&pending, "ctl", "messages", "ls", "m")
	if len(pending) != 2 || pending[1].ID != later.ID || pending[1].Position <= p1.Position {
		t.Fatalf("after run-now: want %s pending after %s, have %+v", later.ID, p1.ID, pending)
	}
	c.fails(exitNotFound, []string{"not a delayed message"}, "ctl", "run-now", "m", later.ID)

	// schedule trigger enqueues one job now.
	def := scheduler.Definition{Name: "nightly", Queue: "m", Task: "report", Schedule: scheduler.Spec{Type: scheduler.TypeCron, Expr: "0 3 * * *"}}
	if err := scheduler.NewManager(st.Schedules()).Add(ctx, def); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("ctl", "schedule", "trigger", "nightly").stdout; !strings.Contains(out, "sched:nightly:manual-") {
		t.Fatalf("trigger: want the job's id, have %q", out)
	}
	c.okJSON(&pending, "ctl", "messages", "ls", "m")
	if len(pending) != 3 || !strings.HasPrefix(pending[2].ID, "sched:nightly:manual-") {
		t.Fatalf("after trigger: want the job pending, have %+v", pending)
	}
	c.fails(exitNotFound, []string{"not found"}, "ctl", "schedule", "trigger", "nope")
}
