package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
)

func TestAPIAuthentication(t *testing.T) {
	r := newRig(t)
	r.want(http.StatusUnauthorized, "", "GET", "/api/v1/queues", "")
	r.want(http.StatusUnauthorized, "", "POST", "/api/v1/pause", "{}")
	if st, _ := r.call("", "GET", "/api/v1/whoami", ""); st != http.StatusUnauthorized {
		t.Fatalf("whoami without a token: want 401, have %d", st)
	}
	req, _ := http.NewRequest("GET", r.http.URL+"/api/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer drv_not-a-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong token: want 401, have %d", resp.StatusCode)
	}
	who := decode[map[string]string](t, r.want(200, "viewer", "GET", "/api/v1/whoami", ""))
	if who["role"] != "viewer" || who["name"] != "viewer-user" {
		t.Fatalf("whoami: want viewer-user (viewer), have %v", who)
	}
	// A producer may not read the fleet.
	r.want(http.StatusForbidden, "producer", "GET", "/api/v1/queues", "")
}

func TestAPIRolesForEveryMutation(t *testing.T) {
	r := newRig(t)
	r.queueWith("q1", 1)
	ctx := context.Background()
	delayed, err := r.store.Producer().EnqueueIn(ctx, &drover.Message{Queue: "q1", Task: "t"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, path, body string
		need               auth.Role
	}{
		{"POST", "/api/v1/queues/q1/pause", `{"reason":"test"}`, auth.Operator},
		{"POST", "/api/v1/queues/q1/resume", ``, auth.Operator},
		{"POST", "/api/v1/members/w1/pause", ``, auth.Operator},
		{"POST", "/api/v1/members/w1/resume", ``, auth.Operator},
		{"POST", "/api/v1/pause", `{"reason":"all"}`, auth.Operator},
		{"POST", "/api/v1/resume", ``, auth.Operator},
		{"POST", "/api/v1/queues/q1/delayed/" + delayed.ID + "/run", ``, auth.Operator},
		{"POST", "/api/v1/queues/q1/offset", `{"to":"latest","dry_run":true}`, auth.Admin},
		{"POST", "/api/v1/queues/q1/dead/purge", ``, auth.Admin},
		{"PUT", "/api/v1/queues/q2/config", `{"concurrency":2,"tasks":{"*":{"command":["/bin/true"]}}}`, auth.Admin},
	}
	for _, c := range cases {
		for _, role := range []auth.Role{auth.Viewer, auth.Producer, auth.Operator, auth.Admin} {
			if role.Allows(c.need) {
				continue
			}
			r.want(http.StatusForbidden, role.String(), c.method, c.path, c.body)
		}
		want := http.StatusOK
		r.want(want, c.need.String(), c.method, c.path, c.body)
	}
	// Every one of them is in the audit log, or (refused for the role) in
	// the refusal stream.
	recs := decode[[]ops.AuditRecord](t, r.want(200, "viewer", "GET", "/api/v1/audit?limit=500", ""))
	refused, ok := 0, 0
	for _, rec := range decode[[]ops.AuditRecord](t, r.want(200, "viewer", "GET", "/api/v1/audit/refusals?limit=500", "")) {
		if rec.Status == http.StatusForbidden && rec.Who != "anonymous" { // a role too low: the refusal stream
			refused++
		}
	}
	for _, rec := range recs {
		switch rec.Status {
		case http.StatusForbidden:
			refused++
		case http.StatusOK:
			ok++
		}
	}
	if ok != len(cases) {
		t.Errorf("audit: want %d successful mutations, have %d", len(cases), ok)
	}
	if refused == 0 {
		t.Errorf("audit: want the refused mutations recorded, have none")
	}
	if recs[0].Action != "queue.config" || recs[0].Who != "admin-user" || recs[0].Result != "ok" {
		t.Errorf("audit: newest record: want queue.config by admin-user ok, have %+v", recs[0])
	}
}

func TestAPIBadInput(t *testing.T) {
	r := newRig(t)
	r.queueWith("q1", 3)
	for _, c := range []struct {
		status             int
		role, method, path string
		body               string
	}{
		{404, "viewer", "GET", "/api/v1/queues/nope", ""},
		{404, "viewer", "GET", "/api/v1/queues/nope/pending", ""},
		{404, "viewer", "GET", "/api/v1/queues/nope/delayed", ""},
		{404, "viewer", "GET", "/api/v1/queues/nope/dead", ""},
		{404, "viewer", "GET", "/api/v1/queues/q1/messages/nope", ""},
		{404, "operator", "POST", "/api/v1/queues/nope/pause", ""},
		{404, "operator", "POST", "/api/v1/queues/q1/delayed/nope/revoke", ""},
		{404, "operator", "POST", "/api/v1/queues/q1/delayed/nope/run", ""},
		{404, "operator", "POST", "/api/v1/queues/q1/dead/nope/retry", ""},
		{404, "admin", "POST", "/api/v1/queues/q1/dead/nope/purge", ""},
		{404, "operator", "POST", "/api/v1/schedules/nope/trigger", ""},
		{404, "viewer", "GET", "/api/v1/schedules/nope", ""},
		{404, "viewer", "GET", "/api/v1/members/nope", ""},
		{400, "viewer", "GET", "/api/v1/queues/bad{name}", ""},
		{400, "viewer", "GET", "/api/v1/queues?sort=color", ""},
		{400, "viewer", "GET", "/api/v1/queues?page=x", ""},
		{400, "viewer", "GET", "/api/v1/queues?per_page=100000", ""},
		{400, "viewer", "GET", "/api/v1/queues?order=up", ""},
		{400, "viewer", "GET", "/api/v1/queues/q1/pending?limit=0", ""},
		{400, "viewer", "GET", "/api/v1/queues/q1/dead?offset=-1", ""},
		{400, "admin", "POST", "/api/v1/queues/q1/offset", `{"to":"yesterday-ish"}`},
		{400, "admin", "POST", "/api/v1/queues/q1/offset", `{"to":"2024-13-45T99:00:00Z"}`},
		{400, "admin", "POST", "/api/v1/queues/q1/offset", `{}`},
		{400, "admin", "POST", "/api/v1/queues/q1/offset", `{"to":"latest","dry_run":"perhaps"}`},
		{400, "admin", "POST", "/api/v1/queues/q1/offset", `not json`},
		{400, "admin", "PUT", "/api/v1/queues/q1/config", `{"name":"other"}`},
		{400, "admin", "PUT", "/api/v1/queues/q1/config", `{"colour":"red"}`},
		{400, "operator", "PUT", "/api/v1/schedules/s1", `{"name":"s1"}`},
		{409, "admin", "PUT", "/api/v1/queues/q1/config", `{"tasks":{"*":{"command":["/bin/true"]}}}`},
		{413, "operator", "POST", "/api/v1/queues/q1/pause", `{"reason":"` + strings.Repeat("x", 70<<10) + `"}`},
	} {
		got, body := r.call(c.role, c.method, c.path, c.body)
		if got != c.status {
			t.Errorf("%s %s: want %d, have %d: %.200s", c.method, c.path, c.status, got, body)
			continue
		}
		var e struct {
			Error  string `json:"error"`
			Status int    `json:"status"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" || e.Status != got {
			t.Errorf("%s %s: want a JSON error with the status, have %.200s", c.method, c.path, body)
		}
	}
	// A refused mutation left nothing half-done: the queue is not paused.
	d := decode[ops.QueueDetail](t, r.want(200, "viewer", "GET", "/api/v1/queues/q1", ""))
	if d.Paused || d.Lag != 3 {
		t.Fatalf("after refused requests: want q1 unpaused with lag 3, have paused=%v lag=%d", d.Paused, d.Lag)
	}
}

func TestOpenConsoleAdmitsLoopbackAsAdmin(t *testing.T) {
	r := newRig(t)
	open, err := auth.New(auth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Ops: r.srv.fleetOps(), Store: r.store, Auth: open})
	if err != nil {
		t.Fatal(err)
	}
	h := httptestServer(t, srv)
	resp, err := http.Get(h + "/api/v1/whoami")
	if err != nil {
		t.Fatal(err)
	}
	var who map[string]string
	json.NewDecoder(resp.Body).Decode(&who)
	resp.Body.Close()
	if who["role"] != "admin" || who["via"] != "loopback" {
		t.Fatalf("open console from loopback: want admin via loopback, have %v", who)
	}
	req, _ := http.NewRequest("GET", h+"/", nil)
	req.Header.Set("Accept", "text/html")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1<<16)
	n, _ := io.ReadFull(resp.Body, b)
	resp.Body.Close()
	if !strings.Contains(string(b[:n]), "listens on loopback only") {
		t.Fatalf("open console: want the loopback-only banner, have %.500s", b[:n])
	}
}

func httptestServer(t *testing.T, s *Server) string {
	h := httptest.NewServer(s.Handler())
	t.Cleanup(h.Close)
	return h.URL
}

// TestEveryEndpointNeedsItsRole asks every API route without credentials
// (401) and with each role below the one it needs (403).
func TestEveryEndpointNeedsItsRole(t *testing.T) {
	r := newRig(t)
	r.queueWith("q", 1)
	routes := []struct {
		method, path string
		need         auth.Role
	}{
		{"GET", "/api/v1/whoami", auth.Viewer},
		{"GET", "/api/v1/overview", auth.Viewer},
		{"GET", "/api/v1/queues", auth.Viewer},
		{"GET", "/api/v1/queues/q", auth.Viewer},
		{"GET", "/api/v1/queues/q/pending", auth.Viewer},
		{"GET", "/api/v1/queues/q/delayed", auth.Viewer},
		{"GET", "/api/v1/queues/q/dead", auth.Viewer},
		{"GET", "/api/v1/queues/q/messages/x", auth.Viewer},
		{"GET", "/api/v1/members", auth.Viewer},
		{"GET", "/api/v1/members/m", auth.Viewer},
		{"GET", "/api/v1/schedules", auth.Viewer},
		{"GET", "/api/v1/schedules/s", auth.Viewer},
		{"GET", "/api/v1/audit", auth.Viewer},
		{"POST", "/api/v1/queues/q/pause", auth.Operator},
		{"POST", "/api/v1/queues/q/resume", auth.Operator},
		{"POST", "/api/v1/members/m/pause", auth.Operator},
		{"POST", "/api/v1/members/m/resume", auth.Operator},
		{"POST", "/api/v1/pause", auth.Operator},
		{"POST", "/api/v1/resume", auth.Operator},
		{"POST", "/api/v1/queues/q/delayed/x/revoke", auth.Operator},
		{"POST", "/api/v1/queues/q/delayed/x/run", auth.Operator},
		{"POST", "/api/v1/queues/q/dead/x/retry", auth.Operator},
		{"POST", "/api/v1/schedules/s/enable", auth.Operator},
		{"POST", "/api/v1/schedules/s/disable", auth.Operator},
		{"POST", "/api/v1/schedules/s/trigger", auth.Operator},
		{"PUT", "/api/v1/schedules/s", auth.Operator},
		{"DELETE", "/api/v1/schedules/s", auth.Operator},
		{"POST", "/api/v1/queues/q/dead/x/purge", auth.Admin},
		{"POST", "/api/v1/queues/q/dead/purge", auth.Admin},
		{"POST", "/api/v1/queues/q/offset", auth.Admin},
		{"PUT", "/api/v1/queues/q/config", auth.Admin},
		{"DELETE", "/api/v1/queues/q/config", auth.Admin},
	}
	for _, rt := range routes {
		if st, body := r.call("", rt.method, rt.path, ""); st != http.StatusUnauthorized {
			t.Errorf("%s %s without credentials: want 401, have %d: %.200s", rt.method, rt.path, st, body)
		}
		for _, role := range []auth.Role{auth.Viewer, auth.Producer, auth.Operator, auth.Admin} {
			st, body := r.call(role.String(), rt.method, rt.path, "")
			switch {
			case !role.Allows(rt.need) && st != http.StatusForbidden:
				t.Errorf("%s %s as %s: want 403, have %d: %.200s", rt.method, rt.path, role, st, body)
			case role.Allows(rt.need) && (st == http.StatusForbidden || st == http.StatusUnauthorized):
				t.Errorf("%s %s as %s: want it allowed, have %d: %.200s", rt.method, rt.path, role, st, body)
			}
		}
	}
	// The messages are untouched: no request, refused or allowed, lost any.
	if d := decode[ops.QueueDetail](t, r.want(200, "viewer", "GET", "/api/v1/queues/q", "")); d.Lag != 1 {
		t.Fatalf("after the refused requests: want lag 1, have %d", d.Lag)
	}
}
