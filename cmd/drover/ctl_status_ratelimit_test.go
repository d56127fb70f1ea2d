package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/ops"
)

// A queue whose backlog waits for its rate limit reads "rate-limited" in
// `ctl status` (table and JSON) and on its console page (ops.Queue), as
// its owner says; a queue without a limit does not.
func TestCtlStatusShowsARateLimitedQueue(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "limited", "--rate-limit", "0.2", "--rate-burst", "1", "--task", "*=/bin/true")
	c.ok("ctl", "queue", "create", "free", "--task", "*=/bin/true")
	c.startWorker("w1")
	c.enqueueN("limited", 20)
	c.enqueueN("free", 3)
	eventually(t, 60*time.Second, func() error {
		var rep statusReport
		c.okJSON(&rep, "ctl", "status")
		held := map[string]bool{}
		for _, q := range rep.Queues {
			held[q.Queue] = q.RateLimited
		}
		if !held["limited"] || held["free"] {
			return fmt.Errorf("want limited rate-limited and free not, have %v (notes %v)", held, rep.Notes)
		}
		return nil
	})
	table := c.ok("ctl", "status").stdout
	var line string
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "limited ") {
			line = l
		}
	}
	if !strings.Contains(table, "HELD") || !strings.Contains(line, " rate-limited ") {
		t.Fatalf("table: want a HELD column and limited rate-limited, have:\n%s", table)
	}
	o, err := ops.New(ops.Config{ZK: c.session(), Store: c.store()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := o.Queues().Queue(context.Background(), "limited")
	if err != nil || !d.RateLimited {
		t.Fatalf("console's queue detail: want rate-limited, have %+v (%v)", d, err)
	}
}
