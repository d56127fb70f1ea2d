package web

import (
	"context"
	"testing"
	"time"
)

// TestSamplingStopsWhenNobodyLooks: the history sampler reads the fleet
// while the console is used and stops after idleAfter without a request.
func TestSamplingStopsWhenNobodyLooks(t *testing.T) {
	r := newRig(t)
	now := time.Unix(1_800_000_000, 0)
	r.srv.cfg.Now = func() time.Time { return now }
	r.srv.lastUse.Store(now.UnixNano())
	ctx := context.Background()
	r.srv.sample(ctx)
	if n := len(r.srv.history); n != 1 {
		t.Fatalf("a fresh console: want 1 sample, have %d", n)
	}
	now = now.Add(idleAfter + time.Second)
	r.srv.sample(ctx)
	if n := len(r.srv.history); n != 1 {
		t.Fatalf("idle for longer than %s: want no new sample, have %d samples", idleAfter, n)
	}
	r.want(200, "viewer", "GET", "/api/v1/overview", "") // a request: sampling resumes
	now = now.Add(time.Second)
	r.srv.sample(ctx)
	if n := len(r.srv.history); n < 2 {
		t.Fatalf("after a request: want sampling again, have %d samples", n)
	}
}
