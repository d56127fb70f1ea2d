package web

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
)

// A queue's recently finished jobs (outcome records, newest first) and its
// retrying jobs with their last attempt's error, on the API and the page.
func TestRecentJobsOfAQueue(t *testing.T) {
	r := newRig(t)
	r.configure("rq")
	ctx := context.Background()
	now := time.Now().UTC()
	outs := []drover.Outcome{
		{ID: "older", State: drover.JobSucceeded, Task: "t", Attempt: 1, FinishedAt: now.Add(-time.Minute), Duration: 0.5, Member: "w1"},
		{ID: "newer", State: drover.JobSucceeded, Task: "t", Attempt: 2, FinishedAt: now, Duration: 1.25, Member: "w2"},
	}
	if _, err := r.store.Log().TrimRecording(ctx, "rq", 0, 0, outs, drover.Outcomes{}); err != nil {
		t.Fatal(err)
	}
	m := &drover.Message{Queue: "rq", Task: "send", ID: "again", Attempt: 2,
		Extra: map[string]json.RawMessage{"last_error": json.RawMessage(`{"error":"exit status 3","exit_code":3,"stderr_tail":"smtp refused","failed_at":"2030-01-01T00:00:00Z"}`)}}
	if _, err := r.store.Producer().EnqueueIn(ctx, m, time.Hour); err != nil {
		t.Fatal(err)
	}
	rec := decode[ops.Recent](t, r.want(200, "viewer", "GET", "/api/v1/queues/rq/recent", ""))
	if len(rec.Finished) != 2 || rec.Finished[0].ID != "newer" || rec.Finished[0].Member != "w2" {
		t.Fatalf("finished: want newer then older, have %+v", rec.Finished)
	}
	if len(rec.Retrying) != 1 || rec.Retrying[0].Attempt != 2 || rec.Retrying[0].Failure == nil || rec.Retrying[0].Failure.Reason != "exit status 3" {
		t.Fatalf("retrying: want again at attempt 2 with its last error, have %+v", rec.Retrying)
	}
	page := r.page("viewer", "/queues/rq")
	for _, want := range []string{`id="finished"`, `data-id="newer"`, "1.250 s", `id="retrying"`, "exit status 3", "smtp refused"} {
		if !strings.Contains(page, want) {
			t.Errorf("queue page: want %q", want)
		}
	}
}
