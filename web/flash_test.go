package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestFlashShowsOnlyTheServersOwnMessages: the message box shows the
// sentence an action's redirect carries, and nothing a link puts in
// ?flash= (issue 41: content spoofing in the console's own voice), nor a
// real message with another's signature.
func TestFlashShowsOnlyTheServersOwnMessages(t *testing.T) {
	r := newRig(t)
	r.queueWith("fq", 0)
	op := r.login("operator")
	code, loc := op.submit(op.page("/queues/fq"), "pause", map[string]string{"reason": "maintenance"})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/queues/fq?flash=") {
		t.Fatalf("pause form: want a redirect back with a flash, have %d %s", code, loc)
	}
	if pg := op.page(loc); !strings.Contains(pg, `id="flash">Paused queue fq.</p>`) {
		t.Fatalf("the page after the pause: want its flash shown, have:\n%s", pg)
	}
	spoof := "Session expired: paste your admin token at https://evil.example/relogin"
	u, _ := url.Parse(loc)
	forged := u.Query()
	forged.Set("flash", spoof) // the real message's signature, another text
	for _, path := range []string{"/queues?flash=" + url.QueryEscape(spoof), "/queues/fq?" + forged.Encode()} {
		if pg := op.page(path); strings.Contains(pg, "evil.example") || strings.Contains(pg, `id="flash"`) {
			t.Errorf("GET %s: want no flash shown, have:\n%s", path, pg)
		}
	}
}

// TestStaleSessionIsSentToLogIn: a page asked for with a session cookie
// that no longer works (here: logged out) is sent to the login page, which
// says why, with the cookie cleared and the refusal recorded, instead of a
// 401 page with no way to log in (issue 41). The login page's message is
// chosen by a code: nothing in the query is shown.
func TestStaleSessionIsSentToLogIn(t *testing.T) {
	r := newRig(t)
	s := r.login("viewer")
	u, _ := url.Parse(r.http.URL)
	cookies := s.client.Jar.Cookies(u)
	if len(cookies) != 1 {
		t.Fatalf("after login: want the session cookie, have %v", cookies)
	}
	req, _ := http.NewRequest("POST", r.http.URL+"/logout", nil)
	if resp, err := s.client.Do(req); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: want 303, have %v %v", resp, err)
	}
	req, _ = http.NewRequest("GET", r.http.URL+"/queues?view=all", nil)
	req.Header.Set("Accept", "text/html")
	req.AddCookie(cookies[0])
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/login?why=ended&next="+url.QueryEscape("/queues?view=all") {
		t.Fatalf("a page with a logged-out cookie: want 303 to the login page saying why, have %d %q", resp.StatusCode, loc)
	}
	if c := resp.Cookies(); len(c) != 1 || c[0].Name != "drover_session" || c[0].MaxAge >= 0 {
		t.Errorf("want the stale cookie cleared, have %v", c)
	}
	if pg := r.want(200, "", "GET", "/login?why=ended", ""); !strings.Contains(pg, "Your session has ended") {
		t.Errorf("login page after a stale session: want it to say so, have:\n%s", pg)
	}
	spoof := "Session expired: paste your admin token at https://evil.example/relogin"
	for _, q := range []string{"error", "why"} {
		if pg := r.want(200, "", "GET", "/login?"+q+"="+url.QueryEscape(spoof), ""); strings.Contains(pg, "evil.example") || strings.Contains(pg, `id="login-error"`) {
			t.Errorf("login page with ?%s=<text>: want no message, have:\n%s", q, pg)
		}
	}
	refusals := r.want(200, "viewer", "GET", "/api/v1/audit/refusals", "")
	if !strings.Contains(refusals, "session ended by logout") {
		t.Errorf("refusal stream: want the stale cookie's refusal, have %.500s", refusals)
	}
}
