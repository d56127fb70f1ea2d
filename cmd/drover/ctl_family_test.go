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
	recs, err := o.Audit().Records(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Action == "family.set" && r.Target == "/families/cust" && strings.HasPrefix(r.Detail, "update ") {
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

// A family is refused with exit 2 and the field named when its prefix is
// another family's (it exited 1) or it routes no task (it was accepted);
// `queue update` of a family's queue before its first enqueue configures
// it from its family's configuration (it exited 3, queue not found).
func TestFamilyCreateRefusalsAndUpdateBeforeFirstEnqueue(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "family", "create", "cust", "--prefix", "cust-", "--concurrency", "2", "--rate-limit", "5", "--task", "*=/bin/true")
	c.fails(exitUsage, []string{`family cust has the prefix "cust-" already`}, "ctl", "family", "create", "other", "--prefix", "cust-", "--task", "*=/bin/true")
	c.fails(exitUsage, []string{"queue.tasks", "no task route"}, "ctl", "family", "create", "bare", "--prefix", "bare-")
	c.fails(exitRefused, []string{"exists"}, "ctl", "family", "create", "cust", "--prefix", "cust-", "--task", "*=/bin/true")
	c.fails(exitUsage, []string{"family neg: max_queues: must be ≥ 0"}, "ctl", "family", "create", "neg", "--prefix", "neg-", "--max-queues", "-1", "--task", "*=/bin/true")
	var fams []drover.FamilyConfig
	if c.okJSON(&fams, "ctl", "family", "ls"); len(fams) != 1 {
		t.Fatalf("want only cust stored, have %+v", fams)
	}
	// --max-queues is stored, and kept by a --replace that does not give it.
	c.ok("ctl", "family", "create", "cust", "--prefix", "cust-", "--concurrency", "2", "--rate-limit", "5", "--task", "*=/bin/true", "--max-queues", "7", "--replace")
	c.ok("ctl", "family", "create", "cust", "--prefix", "cust-", "--concurrency", "2", "--rate-limit", "5", "--task", "*=/bin/true", "--replace")
	if c.okJSON(&fams, "ctl", "family", "ls"); len(fams) != 1 || fams[0].MaxQueues != 7 {
		t.Fatalf("want cust with max_queues 7 after two replaces, have %+v", fams)
	}

	var cfg drover.QueueConfig
	c.okJSON(&cfg, "ctl", "queue", "update", "cust-1", "--concurrency", "1")
	if cfg.Name != "cust-1" || cfg.Family != "cust" || cfg.Concurrency != 1 || cfg.RateLimit.PerSecond != 5 || len(cfg.Tasks) != 1 {
		t.Fatalf("update before the first enqueue: want the family's configuration with concurrency 1, have %+v", cfg)
	}
	var shown drover.QueueConfig
	if c.okJSON(&shown, "ctl", "queue", "show", "cust-1"); shown.Concurrency != 1 || shown.Family != "cust" {
		t.Fatalf("stored: want concurrency 1 of family cust, have %+v", shown)
	}
	c.okJSON(&cfg, "ctl", "queue", "update", "cust-1", "--rate-limit", "7")
	if cfg.Concurrency != 1 || cfg.RateLimit.PerSecond != 7 {
		t.Fatalf("a second update: want concurrency 1 kept and rate 7, have %+v", cfg)
	}
	c.fails(exitNotFound, []string{"queue not found"}, "ctl", "queue", "update", "nobody-1", "--concurrency", "1")
}
