package web

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
)

// openRig is the rig's fleet behind an open console (no tokens: loopback
// clients are admin), with the job endpoints; it returns the server and
// its base URL.
func openRig(t *testing.T) (*rig, *Server, string) {
	t.Helper()
	r := newRig(t)
	r.queueWith("q", 1)
	open, err := auth.New(auth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Ops: r.srv.fleetOps(), Store: r.store, Auth: open})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	r.withJobs(0)
	return r, srv, httptestServer(t, srv)
}

// pathOf fills a route pattern's wildcards: {queue} is q, others x.
func pathOf(pattern string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(pattern, '{')
		if i < 0 {
			b.WriteString(pattern)
			return b.String()
		}
		j := strings.IndexByte(pattern[i:], '}')
		b.WriteString(pattern[:i])
		if pattern[i:i+j+1] == "{queue}" {
			b.WriteString("q")
		} else {
			b.WriteString("x")
		}
		pattern = pattern[i+j+1:]
	}
}

// audited reports whether the audit log or the refusal stream holds a
// record of target with status.
func audited(t *testing.T, o *ops.Ops, target string, status int) bool {
	t.Helper()
	recs, err := o.Audit().Records(context.Background(), 0, 500)
	if err != nil {
		t.Fatal(err)
	}
	refused, err := o.Audit().Refusals(context.Background(), 0, 500)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range append(recs, refused...) {
		if rec.Target == target && rec.Status == status {
			return true
		}
	}
	return false
}

// refusalsFrom ends srv's minute of refusal counts (writing their
// records) and returns how many refusals of source the refusal stream
// accounts for: its records one by one, plus those its counts add.
func refusalsFrom(t *testing.T, srv *Server, source string) int {
	t.Helper()
	ctx := context.Background()
	srv.writeRefusals(ctx, srv.refusals.flush(srv.cfg.Now().Add(time.Minute)))
	recs, err := srv.fleetOps().Audit().Refusals(ctx, 0, 500)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rec := range recs {
		if rec.Action != "refusals" {
			if sourceOf(rec) == source {
				n++
			}
			continue
		}
		var count int
		if _, err := fmt.Sscanf(rec.Detail, "%d refusals from "+source+" ", &count); err == nil {
			n += count - refusalSamples
		}
	}
	return n
}

// TestOpenConsoleRefusesAForeignHostOnEveryMutation sends what a page of
// evil.example rebound to 127.0.0.1 sends (Host and Origin evil.example,
// Sec-Fetch-Site same-origin) to every mutating route of an open console:
// each is answered 403 and audited, while the same request with the
// console's own Host is not refused.
func TestOpenConsoleRefusesAForeignHostOnEveryMutation(t *testing.T) {
	r, srv, base := openRig(t)
	u, _ := url.Parse(base)
	evil := "evil.example:" + u.Port()
	if len(srv.mutations) < 20 {
		t.Fatalf("want every mutating route registered, have %d: %v", len(srv.mutations), srv.mutations)
	}
	send := func(method, path, host string) int {
		req, err := http.NewRequest(method, base+path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	refused := 0
	for i, m := range srv.mutations {
		method, pattern, _ := strings.Cut(m, " ")
		path := pathOf(pattern)
		if st := send(method, path, evil); st != http.StatusForbidden {
			t.Errorf("%s %s with Host %s: want 403, have %d", method, path, evil, st)
			continue
		}
		refused++
		if i == 0 && !audited(t, srv.fleetOps(), strings.TrimPrefix(path, APIPrefix), http.StatusForbidden) {
			t.Errorf("%s %s with Host %s: refused but not audited", method, path, evil)
		}
	}
	for _, read := range []string{"/api/v1/whoami", "/", "/queues/q", "/static/app.css", "/login"} {
		if st := send("GET", read, evil); st != http.StatusForbidden {
			t.Errorf("GET %s with Host %s: want 403, have %d", read, evil, st)
		}
		refused++
	}
	// Every refusal is in the refusal stream: the first ones of the
	// source one by one, the rest in the count of their minute.
	if have := refusalsFrom(t, srv, "anonymous@127.0.0.1"); have != refused {
		t.Errorf("refusals of anonymous@127.0.0.1 recorded or counted: want %d, have %d", refused, have)
	}
	// The console's own names still work.
	for _, host := range []string{u.Host, "localhost:" + u.Port(), "[::1]:" + u.Port()} {
		if st := send("POST", "/api/v1/queues/q/pause", host); st != http.StatusOK {
			t.Errorf("pause with Host %s: want 200, have %d", host, st)
		}
	}
	_ = r
}

// TestConsoleAuditsEveryRefusal: a mutation refused for a missing token, a
// bad token, a role too low or a cross-site origin is in the audit log,
// and so is a refused read.
func TestConsoleAuditsEveryRefusal(t *testing.T) {
	r := newRig(t)
	r.queueWith("a", 1)
	cases := []struct {
		name, target string
		status       int
		header       map[string]string
	}{
		{"no token", "/queues/a/pause", http.StatusUnauthorized, nil},
		{"bad token", "/queues/a/resume", http.StatusUnauthorized, map[string]string{"Authorization": "Bearer nope"}},
		{"viewer", "/queues/a/offset", http.StatusForbidden, map[string]string{"Authorization": "Bearer " + r.tokens["viewer"]}},
		{"cross-site", "/pause", http.StatusForbidden, map[string]string{"Authorization": "Bearer " + r.tokens["admin"], "Sec-Fetch-Site": "cross-site"}},
	}
	for _, c := range cases {
		req, _ := http.NewRequest("POST", r.http.URL+APIPrefix+c.target, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: want %d, have %d", c.name, c.status, resp.StatusCode)
			continue
		}
		if !audited(t, r.srv.fleetOps(), c.target, c.status) {
			t.Errorf("%s: %d for %s not in the audit log", c.name, c.status, c.target)
		}
	}
	if st, _ := r.call("", "GET", "/api/v1/queues", ""); st != http.StatusUnauthorized {
		t.Fatalf("read without a token: want 401, have %d", st)
	}
	if !audited(t, r.srv.fleetOps(), "/queues", http.StatusUnauthorized) {
		t.Error("a refused read is not in the audit log")
	}
}

// TestLogoutEndsTheSessionOnTheServer: a copy of the session cookie is
// refused after logout.
func TestLogoutEndsTheSessionOnTheServer(t *testing.T) {
	r := newRig(t)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(r.http.URL+"/login", url.Values{"token": {r.tokens["operator"]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(r.http.URL)
	cookies := jar.Cookies(u)
	if len(cookies) == 0 {
		t.Fatal("login set no cookie")
	}
	whoami := func() int {
		req, _ := http.NewRequest("GET", r.http.URL+"/api/v1/whoami", nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := whoami(); st != http.StatusOK {
		t.Fatalf("whoami with the session: want 200, have %d", st)
	}
	resp, err = client.Post(r.http.URL+"/logout", "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st := whoami(); st != http.StatusUnauthorized {
		t.Fatalf("whoami with the session's cookie replayed after logout: want 401, have %d", st)
	}
}

// TestSmallHardening: HSTS under TLS, no directory listing under /static/,
// invalid UTF-8 in a JSON body refused, a mutation answered 201 audited as
// 201, and an enqueue (a producer's request) not audited (issue 42).
func TestSmallHardening(t *testing.T) {
	r := newRig(t)
	r.queueWith("h", 0)
	r.withJobs(0)
	if st, b := r.call("", "GET", "/static/", ""); st != http.StatusNotFound {
		t.Errorf("GET /static/: want 404, have %d: %.200s", st, b)
	}
	if st, b := r.call("producer", "POST", "/api/v1/queues/h/jobs", "{\"task\":\"t\",\"args\":{\"s\":\"\xff\xfe\"}}"); st != http.StatusBadRequest || !strings.Contains(b, "UTF-8") {
		t.Errorf("a JSON string with invalid UTF-8: want 400 naming UTF-8, have %d: %s", st, b)
	}
	r.want(http.StatusCreated, "producer", "POST", "/api/v1/queues/h/jobs", `{"task":"t"}`)
	if audited(t, r.srv.fleetOps(), "/queues/h/jobs", http.StatusCreated) {
		t.Error("an enqueue (a producer's request) is audited")
	}
	r.want(http.StatusCreated, "admin", "PUT", "/api/v1/families/hf", `{"prefix":"hf-","queue":{"tasks":{"*":{"command":["/bin/true"]}}}}`)
	if !audited(t, r.srv.fleetOps(), "/families/hf", http.StatusCreated) {
		t.Error("a mutation answered 201 is not audited as 201")
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "https://127.0.0.1/login", nil)
	req.TLS = &tls.ConnectionState{}
	r.srv.Handler().ServeHTTP(rec, req)
	if rec.Header().Get("Strict-Transport-Security") == "" {
		t.Error("a response over TLS has no Strict-Transport-Security header")
	}
}
