package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/testing/retiretest"
)

// A family key that retired is gone from the console: the overview's
// count, the queues page, find and a bulk action's selection; a key of
// the family still working and a queue configured on its own stay.
func TestRetiredFamilyKeysAreNotListed(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	fam := drover.FamilyConfig{Name: "customers", Prefix: "cust-", RetireAfter: drover.Duration(time.Hour),
		Queue: drover.QueueConfig{Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}}}
	if err := r.zk.Families().Create(ctx, fam); err != nil {
		t.Fatal(err)
	}
	r.configure("plain")
	reg := retiretest.Start(t, r.zk, r.store)
	for _, q := range []string{"cust-old-1", "cust-old-2", "cust-busy"} {
		if _, err := r.store.Producer().Enqueue(ctx, &drover.Message{Queue: q, Task: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	// The old keys' messages ran and were trimmed, as their owner does;
	// cust-busy's waits.
	for _, q := range []string{"cust-old-1", "cust-old-2"} {
		pos, err := r.store.Inspector().LastPosition(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.store.Log().Trim(ctx, q, pos, 0); err != nil {
			t.Fatal(err)
		}
	}
	if pg := decode[ops.QueuePage](t, r.want(200, "viewer", "GET", "/api/v1/find?match=cust-", "")); pg.Total != 3 {
		t.Fatalf("find cust- before the retire: want the 3 keys, have %+v", pg)
	}

	reg.Clock.Advance(2 * time.Hour)
	reg.WaitRetired(t, "cust-old-1", "cust-old-2")

	pg := decode[ops.QueuePage](t, r.want(200, "viewer", "GET", "/api/v1/find?match=cust-", ""))
	if pg.Total != 1 || len(pg.Queues) != 1 || pg.Queues[0].Queue != "cust-busy" {
		t.Fatalf("find cust- after the retire: want cust-busy alone, have %+v", pg)
	}
	ov := decode[Overview](t, r.want(200, "viewer", "GET", "/api/v1/overview", ""))
	if ov.Totals.Queues != 2 {
		t.Fatalf("overview after the retire: want 2 queues (cust-busy, plain), have %+v", ov.Totals)
	}
	all := decode[ops.QueuePage](t, r.want(200, "viewer", "GET", "/api/v1/queues", ""))
	var names []string
	for _, q := range all.Queues {
		names = append(names, q.Queue)
	}
	if strings.Join(names, ",") != "cust-busy,plain" {
		t.Fatalf("queues after the retire: want cust-busy, plain; have %v", names)
	}
	if html := r.page("viewer", "/queues?match=cust-"); strings.Contains(html, "cust-old") {
		t.Fatal("queues page ?match=cust-: want no retired key, have one")
	}
	res := decode[bulkAnswer](t, r.want(200, "operator", "POST", "/api/v1/bulk/pause", `{"match":"cust-"}`))
	if res.Selected != 1 {
		t.Fatalf("bulk pause cust-: want cust-busy alone selected, have %+v", res)
	}
	// Named, a retired key is what a key before its first enqueue is: a
	// queue of its family, known by the one rule (ops.KnownQueue), as the
	// single pause and ctl answer; a name no family covers is not.
	r.want(200, "operator", "POST", "/api/v1/bulk/pause", `{"queues":"cust-old-1"}`)
	r.want(404, "operator", "POST", "/api/v1/bulk/pause", `{"queues":"nosuch"}`)
}
