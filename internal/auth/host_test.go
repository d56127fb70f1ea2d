package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLocalHost(t *testing.T) {
	cases := []struct {
		host  string
		names []string
		want  bool
	}{
		{"127.0.0.1:8080", nil, true},
		{"127.0.0.1", nil, true},
		{"127.1.2.3:1", nil, true},
		{"[::1]:8080", nil, true},
		{"localhost:8080", nil, true},
		{"LOCALHOST.", nil, true},
		{"evil.example:8080", nil, false},
		{"evil.example", nil, false},
		{"localhost.evil.example", nil, false},
		{"", nil, false},
		{"console.example:443", []string{"console.example"}, true},
		{"Console.Example", []string{"console.example:8080"}, true},
		{"evil.example", []string{"console.example"}, false},
		{"0.0.0.0:8080", nil, true}, // what ctl dials for a member on a wildcard address
		{"[::]:8080", nil, true},
		{"10.0.0.5:8080", []string{"10.0.0.5:8080"}, true},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = c.host
		if got := LocalHost(r, c.names...); got != c.want {
			t.Errorf("LocalHost(Host %q, %v): want %v, have %v", c.host, c.names, c.want, got)
		}
	}
}

// An open authenticator refuses a loopback client whose Host is another
// site's name (DNS rebinding); one with tokens does not look at the Host.
func TestOpenAuthenticatorRefusesAForeignHost(t *testing.T) {
	open, _ := New(Config{Hosts: []string{"console.example"}})
	r := httptest.NewRequest("GET", "http://evil.example:8080/", nil)
	r.RemoteAddr = "127.0.0.1:5555"
	if _, err := open.Authenticate(r); !errors.Is(err, ErrForeignHost) {
		t.Fatalf("open, loopback, Host evil.example: want ErrForeignHost, have %v", err)
	}
	if err := open.CheckHost(r); !errors.Is(err, ErrForeignHost) {
		t.Fatalf("CheckHost(evil.example): want ErrForeignHost, have %v", err)
	}
	r.Host = "console.example"
	if p, err := open.Authenticate(r); err != nil || p.Role != Admin {
		t.Fatalf("open, loopback, the configured name: want admin, have %v %v", p, err)
	}
	_, spec := mustToken(t, "op", Operator)
	withTokens, _ := New(Config{Tokens: []string{spec}})
	r.Host = "evil.example"
	if err := withTokens.CheckHost(r); err != nil {
		t.Fatalf("CheckHost with tokens: want nil, have %v", err)
	}
	g, _ := NewGuard(nil)
	w := httptest.NewRecorder()
	g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})).ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Fatalf("open guard, loopback, Host evil.example: want 403, have %d", w.Code)
	}
}
