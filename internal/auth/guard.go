package auth

import (
	"errors"
	"net/http"
)

// Guard protects an admin listener's debug endpoints (a worker's or a
// scheduler's /debug/state and /debug/pprof): with tokens configured they
// need a bearer token of role Operator or Admin; without tokens only
// loopback clients get in. Scrape and probe endpoints are not guarded.
type Guard struct {
	a *Authenticator
}

// NewGuard builds the guard from the token specs (auth.tokens). hosts are
// the names besides loopback addresses and localhost that an open guard
// accepts in a request's Host (the listen address; see Config.Hosts).
func NewGuard(tokens []string, hosts ...string) (*Guard, error) {
	a, err := New(Config{Tokens: tokens, Hosts: hosts})
	if err != nil {
		return nil, err
	}
	return &Guard{a: a}, nil
}

// Wrap returns h behind the guard: 401 without or with a bad token (403
// for a non-loopback client of an open guard), 403 for a role below
// Operator.
func (g *Guard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Cookie") // debug endpoints take bearer tokens only
		p, err := g.a.Authenticate(r)
		switch {
		case errors.Is(err, ErrForeignHost):
			http.Error(w, "forbidden: "+err.Error(), http.StatusForbidden)
			return
		case err != nil && g.a.Open():
			http.Error(w, "forbidden: debug endpoints answer loopback clients only when auth.tokens is not configured", http.StatusForbidden)
			return
		case errors.Is(err, ErrNoCredentials), err != nil:
			w.Header().Set("WWW-Authenticate", `Bearer realm="drover"`)
			http.Error(w, "unauthorized: debug endpoints need Authorization: Bearer <operator token>", http.StatusUnauthorized)
			return
		case !p.Role.Allows(Operator):
			http.Error(w, "forbidden: debug endpoints need the operator role, "+p.Name+" is "+p.Role.String(), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}
