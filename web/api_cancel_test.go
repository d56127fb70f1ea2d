package web

import (
	"context"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/ops"
)

// Cancelling a message that does not run (pending in an unowned queue, or
// never enqueued) is refused with 409 saying where it is; a viewer may not
// cancel, an unknown queue is 404, a bad then 400; every one is audited.
func TestAPICancelOfAMessageNotRunningSaysWhereItIs(t *testing.T) {
	r := newRig(t)
	r.queueWith("cq", 2)
	es, err := r.store.ReadAfter(context.Background(), "cq", 0, 2)
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
