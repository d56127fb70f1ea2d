package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
)

func send(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// ranIn reports whether the task log holds a run of a message of queue q.
func ranIn(t *testing.T, logPath, q string) bool {
	for _, e := range readExecutions(t, logPath) {
		if e.queue == q {
			return true
		}
	}
	return false
}

// A queue under a family runs from its first enqueue, from the Go client
// and from the HTTP API, with no per-queue command; a queue configured on
// its own keeps its configuration; the family's mutations are audited.
func TestFamilyQueueRunsFromFirstEnqueue(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	logPath := filepath.Join(f.dir, "runs.log")
	script := taskScript(t, f.dir, logPath, "")
	f.mustCtl("family", "create", "customers", "--prefix", "cust-", "--task", "*="+script, "--concurrency", "2", "--rate-limit", "50")
	f.createQueue("cust-vip", false, []string{script}, func(qc *drover.QueueConfig) { qc.Concurrency = 3 })
	f.startWorker("fw")
	c := f.startConsole(t)
	ctx := context.Background()

	if _, err := f.store.Producer().Enqueue(ctx, &drover.Message{Queue: "cust-go", Task: "t"}); err != nil {
		t.Fatal(err)
	}
	// The console was started with viewer/operator/admin tokens; an admin
	// may enqueue too.
	tok := c.tokens[auth.Admin]
	if code, body := send(t, "POST", c.url+"/api/v1/queues/cust-http/jobs", tok, `{"task":"t"}`); code/100 != 2 {
		t.Fatalf("POST a first job to cust-http: want 2xx, have %d %s", code, body)
	}
	if code, body := send(t, "POST", c.url+"/api/v1/queues/nofamily-1/jobs", tok, `{"task":"t"}`); code != http.StatusNotFound {
		t.Fatalf("POST to a queue under no family: want 404, have %d %s", code, body)
	}
	waitFor(t, time.Minute, "the first messages of cust-go and cust-http to run", func() bool {
		return ranIn(t, logPath, "cust-go") && ranIn(t, logPath, "cust-http")
	})

	var cfg drover.QueueConfig
	if err := json.Unmarshal([]byte(f.mustCtl("queue", "show", "cust-go")), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Family != "customers" || cfg.Concurrency != 2 || cfg.RateLimit.PerSecond != 50 {
		t.Fatalf("cust-go: want the family's config from customers, have %+v", cfg)
	}
	var vip drover.QueueConfig
	if err := json.Unmarshal([]byte(f.mustCtl("queue", "show", "cust-vip")), &vip); err != nil {
		t.Fatal(err)
	}
	if vip.Family != "" || vip.Concurrency != 3 {
		t.Fatalf("cust-vip, configured on its own: want concurrency 3 and no family, have %+v", vip)
	}
	if out := f.mustCtl("status"); !strings.Contains(out, "customers") {
		t.Fatalf("ctl status: want the family named beside its queues, have\n%s", out)
	}
	code, body := get(t, c.url+"/api/v1/families", c.tokens[auth.Viewer])
	var listed []drover.FamilyConfig
	if err := json.Unmarshal([]byte(body), &listed); code != 200 || err != nil || len(listed) != 1 || listed[0].Prefix != "cust-" {
		t.Fatalf("GET /api/v1/families: want the family customers, have %d %s", code, body)
	}

	if code, body := get(t, c.url+"/families", c.tokens[auth.Viewer]); code != 200 || !strings.Contains(body, "cust-*") {
		t.Fatalf("console /families: want the family's prefix, have %d %s", code, body)
	}
	if code, body := get(t, c.url+"/queues/cust-go", c.tokens[auth.Viewer]); code != 200 || !strings.Contains(body, `id="family"`) || !strings.Contains(body, ">customers</a>") {
		t.Fatalf("console queue page: want the family that registered cust-go, have %d %s", code, body)
	}

	// API mutations: a replace at the version read, then a refused create.
	fam := drover.FamilyConfig{Name: "devices", Prefix: "dev-", RetireAfter: drover.Duration(time.Hour),
		Queue: drover.QueueConfig{Tasks: map[string]drover.TaskRoute{"*": {Command: []string{script}}}}}
	b, _ := json.Marshal(fam)
	if code, body := send(t, "PUT", c.url+"/api/v1/families/devices", c.tokens[auth.Admin], string(b)); code != http.StatusCreated {
		t.Fatalf("PUT a new family: want 201, have %d %s", code, body)
	}
	if code, body := send(t, "PUT", c.url+"/api/v1/families/devices", c.tokens[auth.Admin], string(b)); code != http.StatusConflict {
		t.Fatalf("PUT a family that exists without its version: want 409, have %d %s", code, body)
	}
	if code, body := send(t, "PUT", c.url+"/api/v1/families/devices", c.tokens[auth.Operator], string(b)); code != http.StatusForbidden {
		t.Fatalf("PUT a family as an operator: want 403, have %d %s", code, body)
	}
	f.mustCtl("family", "rm", "devices")

	o, err := ops.New(ops.Config{ZK: f.zk, Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := o.Audit().Records(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"family.set ctl ok": false, "family.set api ok": false, "family.delete ctl ok": false} // ctl writes the console's actions
	for _, r := range recs {
		via := "api"
		if r.Via == "ctl" {
			via = "ctl"
		}
		result := "refused"
		if r.Result == "ok" {
			result = "ok"
		}
		k := r.Action + " " + via + " " + result
		if _, ok := want[k]; ok {
			want[k] = true
		}
	}
	for k, seen := range want {
		if !seen {
			var all bytes.Buffer
			for _, r := range recs {
				all.WriteString(r.Action + " " + r.Via + " " + r.Result + "\n")
			}
			t.Fatalf("audit log: want %q, have\n%s", k, all.String())
		}
	}
}
