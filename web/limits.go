package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
)

// Bounds of one request (issue 41; docs/web.md, "Limits"). The body is
// bounded by Config.MaxBody, the work by Config.RequestTimeout.
const (
	// MaxHeaderBytes bounds one header (its name and value): past it the
	// request is answered 431.
	MaxHeaderBytes = 8 << 10
	// MaxQueryBytes bounds the query string, and MaxPathBytes the path:
	// past either the request is answered 414.
	MaxQueryBytes = 4 << 10
	MaxPathBytes  = 4 << 10
	// MaxRequestHeaderBytes is what drover web's HTTP server reads of a
	// request's line and headers at most (http.Server.MaxHeaderBytes):
	// the server answers 431 past it, before any handler runs.
	MaxRequestHeaderBytes = 64 << 10
)

// limitSize refuses a request whose path, query or one of whose headers
// is longer than the bounds above, before anything else reads it. The
// refusal goes to the refusal stream (its fields capped there).
func (s *Server) limitSize(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if he := sizeError(r); he != nil {
			s.auditRefusal(r, "", auth.Principal{}, he)
			s.fail(w, r, he)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func sizeError(r *http.Request) *httpError {
	if n := len(r.URL.RawQuery); n > MaxQueryBytes {
		return &httpError{status: http.StatusRequestURITooLong, msg: fmt.Sprintf("query: %d bytes, at most %d", n, MaxQueryBytes)}
	}
	if n := len(r.URL.Path); n > MaxPathBytes {
		return &httpError{status: http.StatusRequestURITooLong, msg: fmt.Sprintf("path: %d bytes, at most %d", n, MaxPathBytes)}
	}
	if n := len(r.Host); n > MaxHeaderBytes {
		return &httpError{status: http.StatusRequestHeaderFieldsTooLarge, msg: fmt.Sprintf("header Host: %d bytes, at most %d", n, MaxHeaderBytes)}
	}
	for name, vals := range r.Header {
		for _, v := range vals {
			if n := len(name) + len(v); n > MaxHeaderBytes {
				return &httpError{status: http.StatusRequestHeaderFieldsTooLarge, msg: fmt.Sprintf("header %.64s: %d bytes, at most %d", name, n, MaxHeaderBytes)}
			}
		}
	}
	return nil
}

// costly reports whether r reads something whose cost grows with the
// fleet: a find (API, or the queues page with a match, which is also the
// bulk actions' preview) or the running view (API and page).
func costly(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch r.URL.Path {
	case APIPrefix + "/find", APIPrefix + "/running", "/running":
		return true
	case "/queues":
		return r.URL.Query().Get("match") != ""
	}
	return false
}

// refuseCrossSite refuses, on a console without tokens, a costly read
// that a browser says another site (or another origin of the same site)
// asked for: Sec-Fetch-Site cross-site or same-site. Such a console
// answers any local browser, so a foreign page's <img> tags would
// otherwise spend its CPU. Requests without the header (API clients) and
// those the user typed or the console linked (none, same-origin) pass.
func (s *Server) refuseCrossSite(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if site := r.Header.Get("Sec-Fetch-Site"); s.auth.Open() && (site == "cross-site" || site == "same-site") && costly(r) {
			he := &httpError{status: http.StatusForbidden, msg: "refused: " + r.URL.Path + " costs the console in proportion to the fleet, and this request came from another site (Sec-Fetch-Site: " + site + "); open it from the console"}
			s.auditRefusal(r, "", auth.Principal{}, he)
			s.fail(w, r, he)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// matchDeadline turns a match that ran out of time into a 503 that says
// so (rather than blaming a backing service); nil for other errors.
func matchDeadline(err error) *httpError {
	if !errors.Is(err, ops.ErrMatchDeadline) {
		return nil
	}
	return &httpError{status: http.StatusServiceUnavailable, msg: "find: " + err.Error()}
}
