package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/drover-dev/drover/internal/ops"
)

// A refused ctl mutation is audited with the status the console answers
// for the same outcome (ops.StatusOf): an unknown queue 404, a queue that
// is not parked 409. (ctl parked recorded 409 for every failure.)
func TestCtlAuditRecordsTheConsolesStatus(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "calm")
	c.fails(3, []string{"nosuch"}, "ctl", "parked", "skip", "nosuch", "01HX")
	c.fails(5, []string{"not parked"}, "ctl", "parked", "retry", "calm", "01HX")

	o, err := ops.New(ops.Config{ZK: c.session(), Store: c.store()})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := o.Audit().Records(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range recs {
		if r.Via == "ctl" {
			have[fmt.Sprintf("%s %s %d", r.Action, r.Target, r.Status)] = true
		}
	}
	for _, want := range []string{"parked.skip nosuch 404", "parked.retry calm 409"} {
		if !have[want] {
			t.Errorf("audit: want a record %q, have %v", want, have)
		}
	}
}
