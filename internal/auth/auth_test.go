package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func mustToken(t *testing.T, name string, role Role) (string, string) {
	t.Helper()
	tok, spec, err := NewToken(name, role)
	if err != nil {
		t.Fatal(err)
	}
	return tok, spec
}

func TestRolesAllow(t *testing.T) {
	cases := []struct {
		have, need Role
		want       bool
	}{
		{Viewer, Viewer, true}, {Viewer, Operator, false}, {Viewer, Producer, false},
		{Producer, Producer, true}, {Producer, Viewer, false}, {Producer, Operator, false},
		{Operator, Viewer, true}, {Operator, Producer, true}, {Operator, Operator, true}, {Operator, Admin, false},
		{Admin, Admin, true}, {Admin, Producer, true}, {RoleNone, Viewer, false},
	}
	for _, c := range cases {
		if got := c.have.Allows(c.need); got != c.want {
			t.Errorf("%s allows %s: want %v, have %v", c.have, c.need, c.want, got)
		}
	}
}

func TestTokenSpecsStoreOnlyTheHash(t *testing.T) {
	tok, spec := mustToken(t, "alice", Operator)
	if strings.Contains(spec, tok) || strings.Contains(spec, strings.TrimPrefix(tok, tokenPrefix)) {
		t.Fatalf("spec %q contains the token", spec)
	}
	a, err := New(Config{Tokens: []string{spec}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.CheckToken(tok)
	if err != nil || p.Name != "alice" || p.Role != Operator {
		t.Fatalf("want alice (operator), have %v %v", p, err)
	}
	if _, err := a.CheckToken(tok + "x"); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("want ErrBadCredentials for a wrong token, have %v", err)
	}
	for _, bad := range []string{"alice:admin:" + tok, "alice:root:sha256:" + strings.Repeat("a", 64), "alice:admin:sha256:abc", ":admin:sha256:" + strings.Repeat("a", 64)} {
		if _, err := ParseToken(bad); err == nil {
			t.Errorf("ParseToken(%q): want an error", bad)
		} else if strings.Contains(err.Error(), tok) {
			t.Errorf("error %q quotes the plain token", err)
		}
	}
	if _, err := ParseTokens([]string{spec, spec}); err == nil {
		t.Error("a name given twice: want an error")
	}
}

func TestOpenAuthenticatorAdmitsLoopbackOnly(t *testing.T) {
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CheckListen("0.0.0.0:8080"); err == nil {
		t.Fatal("open authenticator on 0.0.0.0: want a refusal")
	}
	for _, ok := range []string{"127.0.0.1:0", "[::1]:80", "localhost:8080"} {
		if err := a.CheckListen(ok); err != nil {
			t.Errorf("CheckListen(%s): %v", ok, err)
		}
	}
	r := httptest.NewRequest("GET", "http://127.0.0.1:8080/", nil)
	r.RemoteAddr = "127.0.0.1:5555"
	if p, err := a.Authenticate(r); err != nil || p.Role != Admin {
		t.Fatalf("loopback: want admin, have %v %v", p, err)
	}
	r.RemoteAddr = "10.1.2.3:5555"
	if _, err := a.Authenticate(r); err == nil {
		t.Fatal("non-loopback client of an open authenticator: want refused")
	}
}

func TestSessionsAndCSRF(t *testing.T) {
	tok, spec := mustToken(t, "bob", Viewer)
	now := time.Unix(1_700_000_000, 0)
	a, err := New(Config{Tokens: []string{spec}, SessionKey: "0123456789abcdef0123", Now: func() time.Time { return now }, SecureCookies: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Login(context.Background(), "nope"); err == nil {
		t.Fatal("login with a wrong token: want an error")
	}
	c, p, err := a.Login(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || !c.Secure {
		t.Fatalf("cookie flags: want HttpOnly, SameSite=Strict, Secure; have %+v", c)
	}
	r := httptest.NewRequest("POST", "/x", strings.NewReader("a=b"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.AddCookie(c)
	got, err := a.Authenticate(r)
	if err != nil || got.Name != "bob" || got.Via != "session" {
		t.Fatalf("session: want bob via session, have %v %v", got, err)
	}
	if err := a.CheckCSRF(r, got); err == nil {
		t.Fatal("session POST without a CSRF token: want refused")
	}
	r2 := httptest.NewRequest("POST", "/x", nil)
	r2.Header.Set(CSRFHeader, a.CSRFToken(p))
	if err := a.CheckCSRF(r2, got); err != nil {
		t.Fatalf("right CSRF token: %v", err)
	}

	// A tampered cookie, an expired one, and one whose token was removed.
	bad := *c
	bad.Value = strings.Replace(c.Value, ".", "x.", 1)
	r3 := httptest.NewRequest("GET", "/", nil)
	r3.AddCookie(&bad)
	if _, err := a.Authenticate(r3); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("tampered cookie: want ErrBadCredentials, have %v", err)
	}
	now = now.Add(DefaultSessionTTL)
	if _, err := a.Authenticate(r); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("expired session: want ErrBadCredentials, have %v", err)
	}
	now = now.Add(-time.Hour)
	_, other := mustToken(t, "bob", Viewer)
	b, _ := New(Config{Tokens: []string{other}, SessionKey: "0123456789abcdef0123", Now: func() time.Time { return now }})
	if _, err := b.Authenticate(r); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("session of a replaced token: want ErrBadCredentials, have %v", err)
	}
}

func TestGuard(t *testing.T) {
	opTok, opSpec := mustToken(t, "op", Operator)
	viewTok, viewSpec := mustToken(t, "v", Viewer)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("state")) })
	g, err := NewGuard([]string{opSpec, viewSpec})
	if err != nil {
		t.Fatal(err)
	}
	open, _ := NewGuard(nil)
	cases := []struct {
		name   string
		g      *Guard
		remote string
		token  string
		want   int
	}{
		{"open, loopback", open, "127.0.0.1:1", "", 200},
		{"open, remote", open, "10.0.0.9:1", "", 403},
		{"tokens, remote, none", g, "10.0.0.9:1", "", 401},
		{"tokens, loopback, none", g, "127.0.0.1:1", "", 401},
		{"tokens, remote, operator", g, "10.0.0.9:1", opTok, 200},
		{"tokens, remote, viewer", g, "10.0.0.9:1", viewTok, 403},
		{"tokens, remote, wrong", g, "10.0.0.9:1", "drv_nope", 401},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "http://127.0.0.1:9090/debug/state", nil)
		r.RemoteAddr = c.remote
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+c.token)
		}
		w := httptest.NewRecorder()
		c.g.Wrap(ok).ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s: want %d, have %d (%s)", c.name, c.want, w.Code, w.Body)
		}
	}
}
