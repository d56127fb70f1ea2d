package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
)

// `family create --replace` gives the queues the family registered its new
// configuration, keeps the one an operator changed with `queue update`,
// says how many of each, and the audit entry records the counts.
func TestFamilyReplaceUpdatesItsQueues(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "family", "create", "cust", "--prefix", "cust-", "--rate-limit", "5", "--task", "*=@go")
	s := c.session()
	e, err := s.Families().Get(context.Background(), "cust")
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []drover.QueueConfig
	for i := range 3 {
		cfgs = append(cfgs, e.Config.QueueFor(fmt.Sprintf("cust-%d", i))) // as the registrar registers them
	}
	if _, err := s.Queues().CreateMany(context.Background(), cfgs); err != nil {
		t.Fatal(err)
	}
	c.ok("ctl", "queue", "update", "cust-1", "--rate-limit", "50")

	out := c.ok("ctl", "family", "create", "cust", "--rate-limit", "10", "--task", "*=@go", "--replace").stdout
	if !strings.Contains(out, "registered queues: 2 updated, 1 kept their own configuration") {
		t.Fatalf("want the counts of updated and kept queues, have:\n%s", out)
	}
	for q, want := range map[string]float64{"cust-0": 10, "cust-1": 50, "cust-2": 10} {
		var shown drover.QueueConfig
		c.okJSON(&shown, "ctl", "queue", "show", q)
		if shown.RateLimit.PerSecond != want || shown.Family != "cust" {
			t.Errorf("%s: want rate %g of family cust, have %+v", q, want, shown)
		}
	}
	var replaced struct {
		Name    string `json:"name"`
		Updated int    `json:"queues_updated"`
		Kept    int    `json:"queues_kept"`
	}
	c.okJSON(&replaced, "ctl", "family", "create", "cust", "--rate-limit", "20", "--task", "*=@go", "--replace")
	if replaced.Name != "cust" || replaced.Updated != 2 || replaced.Kept != 1 {
		t.Fatalf("-o json: want cust, 2 updated, 1 kept; have %+v", replaced)
	}

	o, err := ops.New(ops.Config{ZK: s, Store: c.store()})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := o.Audit(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Action == "family.update" && r.Target == "cust" {
			n++
			if !strings.Contains(r.Detail, "queues_updated=2 queues_kept=1") {
				t.Errorf("audit family.update: want the counts in the detail, have %q", r.Detail)
			}
		}
	}
	if n != 2 {
		t.Fatalf("audit: want 2 family.update records, have %d", n)
	}
}
