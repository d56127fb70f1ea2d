package worker

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// /debug/job answers one message's in-flight attempt (404 when it does not
// run here) and sits behind the debug guard like /debug/state.
func TestAdminDebugJobIsGuardedAndAnswersInFlightAttempts(t *testing.T) {
	log := newMemLog()
	log.add("q", msg("busy"))
	ex := &scriptedExecutor{gate: make(chan struct{})}
	w := newTestWorker(t, log, ex, nil)
	if err := w.Start(queueConfig("q", nil), &memClaim{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "busy in flight", func() bool { _, ok := w.Job("q", "busy"); return ok })

	deny := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { http.Error(rw, "no", http.StatusForbidden) })
	}
	get := func(h http.Handler, url, remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", url, nil)
		req.RemoteAddr, req.Host = remote, "127.0.0.1:9090"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	open := w.AdminHandler(AdminConfig{})
	if rec := get(w.AdminHandler(AdminConfig{Debug: deny}), "/debug/job?queue=q&id=busy", "127.0.0.1:1"); rec.Code != http.StatusForbidden {
		t.Fatalf("behind a denying guard: want 403, have %d", rec.Code)
	}
	if rec := get(open, "/debug/job?queue=q&id=busy", "192.0.2.1:1"); rec.Code != http.StatusForbidden {
		t.Fatalf("default guard, remote client: want 403, have %d", rec.Code)
	}
	if rec := get(open, "/debug/job?queue=q", "127.0.0.1:1"); rec.Code != http.StatusBadRequest {
		t.Fatalf("without an id: want 400, have %d", rec.Code)
	}
	if rec := get(open, "/debug/job?queue=q&id=other", "127.0.0.1:1"); rec.Code != http.StatusNotFound {
		t.Fatalf("a message not in flight: want 404, have %d", rec.Code)
	}
	rec := get(open, "/debug/job?queue=q&id=busy", "127.0.0.1:1")
	var js JobState
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &js) != nil || js.Member != "m1" || js.Task.ID != "busy" || js.Task.Started.IsZero() {
		t.Fatalf("in flight: want 200 with member m1 and the attempt, have %d %s", rec.Code, rec.Body)
	}
	close(ex.gate)
}
