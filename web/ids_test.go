package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestEnqueueRefusesControlCharactersInIDs: an HTTP enqueue whose id holds
// NUL, a newline or a bidirectional override is refused 400 naming the id
// and the character, and nothing is written (issue 41: ids may hold NUL).
func TestEnqueueRefusesControlCharactersInIDs(t *testing.T) {
	r := newRig(t)
	r.queueWith("ids", 0)
	r.withJobs(0)
	for _, body := range []string{`{"task":"t","id":"a\u0000b"}`, `{"task":"t","id":"a\nb"}`, `{"task":"t","id":"inv-\u202egnp.exe"}`,
		`{"jobs":[{"task":"t","id":"ok-1"},{"task":"t","id":"bad\u0007"}]}`} {
		if b := r.want(http.StatusBadRequest, "producer", "POST", "/api/v1/queues/ids/jobs", body); !strings.Contains(b, "control character") {
			t.Errorf("enqueue %s: want 400 naming the control character, have %s", body, b)
		}
	}
	es, err := r.store.Log().ReadAfter(context.Background(), "ids", 0, 10)
	if err != nil || len(es) != 0 {
		t.Fatalf("want nothing written, have %d entries %v", len(es), err)
	}
	r.want(http.StatusCreated, "producer", "POST", "/api/v1/queues/ids/jobs", `{"task":"t","id":"שלום-1"}`)
}
