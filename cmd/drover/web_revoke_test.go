package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/auth"
)

// TestLogoutOutlivesARestartOfDroverWeb: a console session logged out
// stays ended after drover web restarts with the same session key (and on
// any other console server of the fleet): the revocation is in Redis, not
// in the process that served the logout. Before issue 41 a copy of the
// logged-out cookie worked again after the restart.
func TestLogoutOutlivesARestartOfDroverWeb(t *testing.T) {
	c := newCluster(t)
	tok, spec, err := auth.NewToken("alice", auth.Operator)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"DROVER_AUTH_TOKENS=" + spec, "DROVER_AUTH_SESSION_KEY=0123456789abcdef0123456789abcdef"}
	base, stop := startWebWith(t, c, env...)

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(base+"/login", url.Values{"token": {tok}, "next": {"/queues"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == auth.SessionCookie {
			cookie = ck
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == nil {
		t.Fatalf("login: want 303 with a session cookie, have %d %v", resp.StatusCode, resp.Cookies())
	}
	whoami := func(base string) (int, string) {
		req, _ := http.NewRequest("GET", base+"/api/v1/whoami", nil)
		req.AddCookie(cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, b := whoami(base); st != http.StatusOK || !strings.Contains(b, "alice") {
		t.Fatalf("whoami with the session: want 200 naming alice, have %d %s", st, b)
	}
	req, _ := http.NewRequest("POST", base+"/logout", nil)
	req.AddCookie(cookie)
	if resp, err = noRedirect.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: want 303, have %d", resp.StatusCode)
	}
	if st, b := whoami(base); st != http.StatusUnauthorized {
		t.Fatalf("the logged-out cookie on the same server: want 401, have %d %s", st, b)
	}

	stop()
	base2, _ := startWebWith(t, c, env...)
	if st, b := whoami(base2); st != http.StatusUnauthorized || !strings.Contains(b, "logout") {
		t.Fatalf("the logged-out cookie after drover web restarted: want 401 saying the session was ended by logout, have %d %s", st, b)
	}
}
