package web

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-dev/drover"
)

// PUT /api/v1/families/{f}?version= gives the family's registered queues
// the new configuration, keeps the one an operator changed, answers with
// both counts, and the audit record carries them.
func TestAPIFamilyReplaceUpdatesItsQueues(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.want(201, "admin", "PUT", "/api/v1/families/cust", `{"prefix":"cust-","queue":{"rate_limit":{"per_second":5},"tasks":{"*":{"inline":true}}}}`)
	fam := decode[familyView](t, r.want(200, "viewer", "GET", "/api/v1/families/cust", ""))
	var cfgs []drover.QueueConfig
	for i := range 3 {
		cfgs = append(cfgs, fam.QueueFor(fmt.Sprintf("cust-%d", i))) // as the registrar registers them
	}
	if _, err := r.zk.Queues().CreateMany(ctx, cfgs); err != nil {
		t.Fatal(err)
	}
	own := cfgs[2]
	own.Concurrency = 1
	if _, err := r.zk.Queues().Update(ctx, own, -1); err != nil {
		t.Fatal(err)
	}
	body := r.want(200, "admin", "PUT", fmt.Sprintf("/api/v1/families/cust?version=%d", fam.Version),
		`{"prefix":"cust-","queue":{"rate_limit":{"per_second":8},"tasks":{"*":{"inline":true}}}}`)
	got := decode[familyReplaced](t, body)
	if got.QueuesUpdated != 2 || got.QueuesKept != 1 || got.Version != fam.Version+1 {
		t.Fatalf("want 2 queues updated, 1 kept, version %d; have %s", fam.Version+1, body)
	}
	for q, want := range map[string]float64{"cust-0": 8, "cust-1": 8, "cust-2": 5} {
		e, err := r.zk.Queues().Get(ctx, q)
		if err != nil || e.Config.RateLimit.PerSecond != want {
			t.Errorf("%s: want rate %g, have %+v, %v", q, want, e.Config, err)
		}
	}
	// A stale version is refused, and changes no queue.
	r.want(409, "admin", "PUT", fmt.Sprintf("/api/v1/families/cust?version=%d", fam.Version),
		`{"prefix":"cust-","queue":{"rate_limit":{"per_second":9},"tasks":{"*":{"inline":true}}}}`)
	if e, _ := r.zk.Queues().Get(ctx, "cust-0"); e.Config.RateLimit.PerSecond != 8 {
		t.Fatalf("after a refused replace: want cust-0 at rate 8, have %+v", e.Config)
	}
	recs, err := r.srv.fleetOps().Audit().Records(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rec := range recs {
		if rec.Action == "family.set" && rec.Status == 200 {
			found = true
			if !strings.Contains(rec.Detail, "queues_updated=2 queues_kept=1") {
				t.Errorf("audit family.set: want the counts in the detail, have %q", rec.Detail)
			}
		}
	}
	if !found {
		t.Fatal("audit: no family.set record of the replace")
	}
}
