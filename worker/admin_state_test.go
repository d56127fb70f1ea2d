package worker

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// /debug/state?queues=names lists the owned queues by name only (what a
// poller that checks who runs what needs), behind the same guard as the
// full form; an unknown form is a 400, not a silent full answer.
func TestAdminDebugStateNamesForm(t *testing.T) {
	w := newTestWorker(t, newMemLog(), &scriptedExecutor{}, nil)
	for _, q := range []string{"b", "a", "c"} {
		if err := w.Start(queueConfig(q, nil), &memClaim{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(url, remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", url, nil)
		req.RemoteAddr, req.Host = remote, "127.0.0.1:9090"
		rec := httptest.NewRecorder()
		w.AdminHandler(AdminConfig{}).ServeHTTP(rec, req)
		return rec
	}
	if rec := get("/debug/state?queues=names", "192.0.2.1:1"); rec.Code != http.StatusForbidden {
		t.Fatalf("remote client: want 403, have %d", rec.Code)
	}
	if rec := get("/debug/state?queues=all", "127.0.0.1:1"); rec.Code != http.StatusBadRequest {
		t.Fatalf("an unknown form: want 400, have %d", rec.Code)
	}
	var names struct{ Worker State }
	rec := get("/debug/state?queues=names", "127.0.0.1:1")
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &names) != nil {
		t.Fatalf("names form: want 200 and JSON, have %d %s", rec.Code, rec.Body)
	}
	if !slices.Equal(names.Worker.QueueNames, []string{"a", "b", "c"}) || len(names.Worker.Queues) != 0 || names.Worker.Member != "m1" {
		t.Fatalf("names form: want member m1, names [a b c] and no queue states, have %+v", names.Worker)
	}
	var running struct{ Worker State }
	rec = get("/debug/state?queues=running", "127.0.0.1:1")
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &running) != nil {
		t.Fatalf("running form: want 200 and JSON, have %d %s", rec.Code, rec.Body)
	}
	if len(running.Worker.Queues) != 0 || running.Worker.Member != "m1" {
		t.Fatalf("running form with nothing running: want no queue states, have %+v", running.Worker)
	}
	var full struct{ Worker State }
	rec = get("/debug/state", "127.0.0.1:1")
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &full) != nil {
		t.Fatalf("full form: want 200 and JSON, have %d %s", rec.Code, rec.Body)
	}
	if len(full.Worker.Queues) != 3 || full.Worker.Queues[0].Name != "a" || len(full.Worker.QueueNames) != 0 {
		t.Fatalf("full form: want the three queues' states by name, have %+v", full.Worker)
	}
}
