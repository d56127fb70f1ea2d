package web

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/jobs"
)

// withJobs registers the job endpoints on the rig's server.
func (r *rig) withJobs(maxBatch int) {
	r.t.Helper()
	err := r.srv.RouteJobs(JobsConfig{
		Store: r.store, Lookup: &jobs.Lookup{Store: r.store.Jobs(), Fleet: jobs.SessionFleet{Session: r.zk}}, MaxBatch: maxBatch,
		Queues: r.zk.Queues(),
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) jobStatus(role, q, id string) drover.JobStatus {
	r.t.Helper()
	var st drover.JobStatus
	if err := json.Unmarshal([]byte(r.want(200, role, "GET", "/api/v1/queues/"+q+"/jobs/"+id, "")), &st); err != nil {
		r.t.Fatal(err)
	}
	return st
}

func TestHTTPProducersEnqueueBatchesDelayedIdempotentAndRevoke(t *testing.T) {
	r := newRig(t)
	r.queueWith("q", 0)
	r.withJobs(0)

	var one JobResult
	json.Unmarshal([]byte(r.want(201, "producer", "POST", "/api/v1/queues/q/jobs", `{"task":"t","args":{"user":42},"headers":{"trace":"x"}}`)), &one)
	if one.ID == "" || one.Position == 0 || one.Delayed || one.Duplicate {
		t.Fatalf("one job: want an id and a position, have %+v", one)
	}
	if st := r.jobStatus("viewer", "q", one.ID); st.State != drover.JobPending || st.Task != "t" {
		t.Fatalf("status of the job: want pending task t, have %+v", st)
	}
	// A producer may read the status of what it enqueued.
	if st := r.jobStatus("producer", "q", one.ID); st.State != drover.JobPending {
		t.Fatalf("status as producer: want pending, have %+v", st)
	}

	// Caller ids are idempotency keys.
	r.want(201, "producer", "POST", "/api/v1/queues/q/jobs", `{"id":"order-7","task":"t"}`)
	var dup JobResult
	json.Unmarshal([]byte(r.want(200, "producer", "POST", "/api/v1/queues/q/jobs", `{"id":"order-7","task":"t"}`)), &dup)
	if !dup.Duplicate || dup.ID != "order-7" {
		t.Fatalf("the same id again: want a duplicate, have %+v", dup)
	}

	// A batch: a duplicate, one in an hour, one at a time, one now.
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	body := fmt.Sprintf(`{"jobs":[{"id":"order-7","task":"t"},{"id":"later","task":"t","in":"1h"},{"task":"t","at":%q},{"task":"t","max_attempts":2}]}`, at.Format(time.RFC3339))
	var batch struct{ Jobs []JobResult }
	json.Unmarshal([]byte(r.want(201, "producer", "POST", "/api/v1/queues/q/jobs", body)), &batch)
	if len(batch.Jobs) != 4 || !batch.Jobs[0].Duplicate || !batch.Jobs[1].Delayed || !batch.Jobs[2].Delayed ||
		batch.Jobs[2].DueAt == nil || !batch.Jobs[2].DueAt.Equal(at) || batch.Jobs[3].Position == 0 {
		t.Fatalf("batch: want duplicate, delayed, delayed at %v, positioned; have %+v", at, batch.Jobs)
	}
	if st := r.jobStatus("viewer", "q", "later"); st.State != drover.JobDelayed || st.DueAt == nil {
		t.Fatalf("status of the delayed job: want delayed with a due time, have %+v", st)
	}
	b, err := r.store.Log().Backlog(context.Background(), "q", 0)
	if err != nil || b.Lag != 3 || b.Delayed != 2 {
		t.Fatalf("backlog: want 3 in the log and 2 delayed, have %+v, %v", b, err)
	}

	// Revoke: producer (and operator) may; the record says who.
	r.want(403, "viewer", "DELETE", "/api/v1/queues/q/jobs/later", "")
	r.want(200, "producer", "DELETE", "/api/v1/queues/q/jobs/later", "")
	if st := r.jobStatus("viewer", "q", "later"); st.State != drover.JobRevoked || st.By != "producer-user" {
		t.Fatalf("after revoke: want revoked by producer-user, have %+v", st)
	}
	r.want(404, "producer", "DELETE", "/api/v1/queues/q/jobs/later", "")
	if st := r.jobStatus("viewer", "q", "never"); st.State != drover.JobUnknown {
		t.Fatalf("an id never enqueued: want unknown, have %+v", st)
	}

	// The queue page looks a job up by id.
	page := r.want(200, "viewer", "GET", "/queues/q?job="+one.ID, "")
	if !strings.Contains(page, `id="job-state"><b>pending</b>`) || !strings.Contains(page, one.ID) {
		t.Fatalf("queue page with ?job=: want the job's state, have:\n%s", page)
	}
}

func TestHTTPProducerRefusalsWriteNothing(t *testing.T) {
	r := newRig(t)
	r.queueWith("q", 0)
	r.withJobs(5)
	const path = "/api/v1/queues/q/jobs"
	good := `{"task":"t"}`
	cases := []struct {
		name   string
		status int
		role   string
		body   string
		want   string
	}{
		{"no token", 401, "", good, ""},
		{"viewer", 403, "viewer", good, ""},
		{"malformed JSON", 400, "producer", `{"task":`, "JSON"},
		{"not an object", 400, "producer", `[1,2]`, "JSON object"},
		{"unknown field", 400, "producer", `{"task":"t","taks":"x"}`, "unknown field"},
		{"no task in a batch", 400, "producer", `{"jobs":[{"task":"t"},{"args":1}]}`, "jobs[1]: task is required"},
		{"in and at", 400, "producer", `{"task":"t","in":"1m","at":"2030-01-01T00:00:00Z"}`, "exclusive"},
		{"bad duration", 400, "producer", `{"task":"t","in":"soon"}`, "duration"},
		{"empty batch", 400, "producer", `{"jobs":[]}`, "no jobs"},
		{"too many jobs", 413, "producer", `{"jobs":[` + strings.Repeat(`{"task":"t"},`, 5) + `{"task":"t"}]}`, "at most 5"},
		{"oversized body", 413, "producer", `{"task":"t","args":"` + strings.Repeat("x", 70<<10) + `"}`, ""},
		{"id too long", 400, "producer", `{"task":"t","id":"` + strings.Repeat("i", 600) + `"}`, "at most 512"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := r.call(c.role, "POST", path, c.body)
			if code != c.status || !strings.Contains(out, c.want) {
				t.Fatalf("want %d with %q, have %d: %s", c.status, c.want, code, out)
			}
		})
	}
	r.want(404, "producer", "POST", "/api/v1/queues/nosuch/jobs", good)
	r.want(401, "", "GET", "/api/v1/queues/q/jobs/x", "")
	r.want(401, "", "DELETE", "/api/v1/queues/q/jobs/x", "")

	b, err := r.store.Log().Backlog(context.Background(), "q", 0)
	if err != nil || b.Lag != 0 || b.Delayed != 0 {
		t.Fatalf("after refused requests: want nothing written, have %+v, %v", b, err)
	}
	if ok, _ := r.store.Inspector().QueueKnown(context.Background(), "nosuch"); ok {
		t.Fatal("a refused request to an unknown queue registered it")
	}
	if code, _ := r.call("producer", "POST", path, good); code != 201 {
		t.Fatalf("a good request after the refusals: want 201, have %d", code)
	}
}

// The example client (standard library only) enqueues, reads a status,
// sends a batch and revokes against a real console.
func TestHTTPProducerExampleClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found (%v): install it with `apt-get install python3`", err)
	}
	r := newRig(t)
	r.queueWith("q", 0)
	r.withJobs(0)
	run := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.Command(python, append([]string{"../examples/http-producer.py"}, args...)...)
		cmd.Env = append(os.Environ(), "DROVER_URL="+r.http.URL, "DROVER_TOKEN="+r.tokens["producer"])
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("http-producer.py %v: %v\n%s%s", args, err, out, stderr)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("http-producer.py %v: not JSON: %v\n%s", args, err, out)
		}
		return v
	}
	if v := run("enqueue", "q", "send", `{"to":"a@example.com"}`, "--id", "mail-1"); v["id"] != "mail-1" || v["position"] == nil {
		t.Fatalf("enqueue: want id mail-1 with a position, have %v", v)
	}
	if v := run("status", "q", "mail-1"); v["state"] != "pending" {
		t.Fatalf("status: want pending, have %v", v)
	}
	if v := run("batch", "q", "send", "3"); len(v["jobs"].([]any)) != 3 {
		t.Fatalf("batch: want 3 results, have %v", v)
	}
	run("enqueue", "q", "send", "--id", "later", "--in", "1h")
	if v := run("revoke", "q", "later"); v["revoked"] != true {
		t.Fatalf("revoke: want revoked, have %v", v)
	}
	if v := run("status", "q", "later"); v["state"] != "revoked" {
		t.Fatalf("status after revoke: want revoked, have %v", v)
	}
}
