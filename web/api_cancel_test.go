package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/jobs"
)

// Cancelling a message that does not run (pending in an unowned queue, or
// never enqueued) is refused with 409 saying where it is; a viewer may not
// cancel, an unknown queue is 404, a bad then 400; every one is audited.
func TestAPICancelOfAMessageNotRunningSaysWhereItIs(t *testing.T) {
	r := newRig(t)
	r.queueWith("cq", 2)
	es, err := r.store.Log().ReadAfter(context.Background(), "cq", 0, 2)
	if err != nil || len(es) != 2 {
		t.Fatalf("read: %v, %d entries", err, len(es))
	}
	second := es[1]
	body := r.want(409, "operator", "POST", "/api/v1/queues/cq/running/"+second.ID+"/cancel", `{"then":"retry"}`)
	if !strings.Contains(body, "not running") || !strings.Contains(body, "pending at position") || !strings.Contains(body, "1 ahead") {
		t.Fatalf("pending: want \"not running; it is pending at position … (1 ahead of it)\", have %s", body)
	}
	body = r.want(409, "operator", "POST", "/api/v1/queues/cq/running/nobody/cancel", `{}`)
	if !strings.Contains(body, "no such message") {
		t.Fatalf("unknown id: want \"no such message\", have %s", body)
	}
	r.want(403, "viewer", "POST", "/api/v1/queues/cq/running/"+second.ID+"/cancel", `{}`)
	r.want(404, "operator", "POST", "/api/v1/queues/nosuch/running/x/cancel", `{}`)
	r.want(400, "operator", "POST", "/api/v1/queues/cq/running/x/cancel", `{"then":"later"}`)

	recs := decode[[]ops.AuditRecord](t, r.want(200, "viewer", "GET", "/api/v1/audit", ""))
	recs = append(recs, decode[[]ops.AuditRecord](t, r.want(200, "viewer", "GET", "/api/v1/audit/refusals", ""))...) // the viewer's 403
	seen := map[int]int{}
	for _, rec := range recs {
		if rec.Action == "job.cancel" {
			seen[rec.Status]++
		}
	}
	if seen[409] != 2 || seen[403] != 1 || seen[404] != 1 || seen[400] != 1 {
		t.Fatalf("audit: want every refusal recorded (409 ×2, 403, 404, 400), have %v", seen)
	}
}

// A running task (as its owner's admin server says) shows a Cancel button
// on the queue page to an operator, not to a viewer (issue 41); the API's cancel reaches the owner with who cancelled
// and what follows, answers with the task being stopped, and is audited.
func TestAPICancelReachesTheOwnerAndThePageOffersIt(t *testing.T) {
	r := newRig(t)
	r.queueWith("cq", 1)
	r.withJobs(0)
	ctx := context.Background()
	es, err := r.store.Log().ReadAfter(ctx, "cq", 0, 1)
	if err != nil || len(es) != 1 {
		t.Fatalf("read: %v, %d entries", err, len(es))
	}
	id := es[0].ID
	var mu sync.Mutex
	var asked url.Values
	running := `{"member":"fake-1","queue":"cq","task":{"id":"` + id + `","task":"t","attempt":0,"position":1,"pid":4242,"started":"2030-01-01T00:00:00Z","runtime_seconds":1%s}}`
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case req.Method == "GET" && req.URL.Path == "/debug/job":
			fmt.Fprintf(w, running, "")
		case req.Method == "POST" && req.URL.Path == "/debug/cancel":
			mu.Lock()
			asked = req.URL.Query()
			mu.Unlock()
			fmt.Fprintf(w, running, `,"cancelled_by":"`+req.URL.Query().Get("by")+`"`)
		default:
			http.NotFound(w, req)
		}
	}))
	defer admin.Close()
	if _, err := r.zk.Group().Join(ctx, drover.Member{Name: "fake-1", Host: "h", PID: 1, AdminAddr: strings.TrimPrefix(admin.URL, "http://"), Capacity: 4, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.zk.Claims().Claim(ctx, "cq", coordinator.Owner{Member: "fake-1"}); err != nil {
		t.Fatal(err)
	}
	page := r.want(200, "operator", "GET", "/queues/cq?job="+id, "")
	if !strings.Contains(page, `id="cancel-job"`) || !strings.Contains(page, "/api/v1/queues/cq/running/"+id+"/cancel") {
		t.Fatalf("queue page of a running job: want a Cancel button posting to its cancel, have:\n%s", page)
	}
	// A viewer may not cancel (403): the page offers no button it could not use.
	if page := r.want(200, "viewer", "GET", "/queues/cq?job="+id, ""); strings.Contains(page, `id="cancel-job"`) || !strings.Contains(page, "<b>running</b>") {
		t.Fatalf("queue page of a running job for a viewer: want it running and no Cancel button, have:\n%s", page)
	}
	c := decode[jobs.Cancelled](t, r.want(200, "operator", "POST", "/api/v1/queues/cq/running/"+id+"/cancel", `{"then":"retry"}`))
	if c.Member != "fake-1" || c.PID != 4242 || c.CancelledBy != "operator-user" || c.Then != "retry" {
		t.Fatalf("cancel: want the task of fake-1, pid 4242, cancelled by operator-user, then retry; have %+v", c)
	}
	mu.Lock()
	if asked.Get("queue") != "cq" || asked.Get("id") != id || asked.Get("by") != "operator-user" || asked.Get("then") != "retry" {
		t.Fatalf("the owner was asked %v", asked)
	}
	mu.Unlock()
	recs := decode[[]ops.AuditRecord](t, r.want(200, "viewer", "GET", "/api/v1/audit", ""))
	if len(recs) == 0 || recs[0].Action != "job.cancel" || recs[0].Result != "ok" || recs[0].Who != "operator-user" {
		t.Fatalf("audit: want the cancel by operator-user first, have %+v", recs)
	}
}
