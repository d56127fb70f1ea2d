package web

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/defaults"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/queue"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Defaults of Config.
const (
	DefaultSnapshotTTL = 2 * time.Second
	DefaultMaxBody     = 1 << 20
	DefaultSampleEvery = 10 * time.Second
	DefaultServeStale  = 2 * time.Minute
	historyLen         = 90 // samples kept: 15 minutes at the default interval
)

// Config configures a Server.
type Config struct {
	// Ops reads and steers the fleet. Nil when the console starts before
	// ZooKeeper answers (drover web): then Store is required, and until
	// SetOps gives one, what needs ZooKeeper answers 503
	// (ErrZooKeeperDown) while the job endpoints (RouteJobs: the producer
	// API, job status) and the audit writes go on through Store.
	Ops *ops.Ops
	// Store is the fleet's queue store (the one Ops has). Required: the
	// job endpoints and the audit write through it, with or without Ops.
	Store *queue.Store
	// Auth authenticates requests. Required.
	Auth *auth.Authenticator
	// Logger logs mutations and errors, and producer requests at debug.
	// Default: a null logger.
	Logger hclog.Logger
	// Metrics counts producer requests (producer_requests_total) and the
	// messages they enqueue (enqueued_total). Default: metrics.Discard.
	Metrics metrics.Recorder
	// SnapshotTTL is how long one read of the whole fleet serves the
	// overview, queues and members pages and their API: concurrent
	// requests within it share one read. Default 2s.
	SnapshotTTL time.Duration
	// MaxBody bounds a request body; a larger one is answered 413.
	// Default 1 MiB.
	MaxBody int64
	// SampleEvery is how often Run records the totals for the overview's
	// history. Default 10s.
	SampleEvery time.Duration
	// RequestTimeout bounds one request's work; past it the request is
	// answered 503 naming what did not answer. Default 5s.
	RequestTimeout time.Duration
	// RedisPing pings Redis: it names Redis in the 503 of a request that
	// failed because Redis did not answer. Optional.
	RedisPing func(ctx context.Context) error
	// ZooKeeper returns nil while the ZooKeeper session is connected, else
	// why not: it names ZooKeeper in a 503. Optional.
	ZooKeeper func() error
	// ServeStale is how old a snapshot may be and still be answered at
	// once while Run reads a fresh one (only while Run runs; any age
	// while Run's read is under way). Default 2m, about twice one read
	// at 100,000 queues on a small machine; negative: never (every
	// request past SnapshotTTL waits).
	ServeStale time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Server is the console: HTML pages and /api/v1. It keeps no state that
// another Server on the same fleet would need (sessions are signed
// cookies, the audit log is in Redis), so any number may run.
type Server struct {
	cfg    Config
	opsNow atomic.Pointer[ops.Ops] // SetOps swaps it after a new ZooKeeper session
	auth   *auth.Authenticator
	log    hclog.Logger
	mux    *http.ServeMux
	tmpl   map[string]*template.Template

	running    atomic.Bool   // Run is running: it serves refreshNow
	reading    atomic.Bool   // Run is reading a snapshot
	lastRead   atomic.Int64  // how long the last read of the fleet took (ns)
	refreshNow chan struct{} // a request found the snapshot stale
	snapMu     sync.Mutex
	snap       *ops.Snapshot
	snapAt     time.Time
	histMu     sync.Mutex
	history    []sample
	lastTask   map[string]ops.TaskCounts
	lastTaskAt time.Time
	// lastUse is when a request last read the snapshot (unix ns), or
	// when the server was made.
	lastUse atomic.Int64

	jobs *JobsConfig // set by RouteJobs; nil: no job endpoints

	refusals  refusalSampler // samples and counts refusals per source (refusal.go)
	mutations []string       // "METHOD /api/v1/path" of every HandleMutation
}

// New validates cfg and builds the server with every built-in route.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Auth == nil {
		return nil, fmt.Errorf("%w: web: Store and Auth are required", drover.ErrInvalidConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.Discard
	}
	cfg.SnapshotTTL = defaults.Positive(cfg.SnapshotTTL, DefaultSnapshotTTL)
	cfg.MaxBody = defaults.Positive(cfg.MaxBody, DefaultMaxBody)
	cfg.SampleEvery = defaults.Positive(cfg.SampleEvery, DefaultSampleEvery)
	cfg.RequestTimeout = defaults.Positive(cfg.RequestTimeout, DefaultRequestTimeout)
	cfg.ServeStale = cmp.Or(cfg.ServeStale, DefaultServeStale) // negative: never serve stale
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, auth: cfg.Auth, log: cfg.Logger, mux: http.NewServeMux(), refreshNow: make(chan struct{}, 1)}
	if cfg.Ops != nil {
		s.opsNow.Store(cfg.Ops)
	}
	s.lastUse.Store(cfg.Now().UnixNano())
	if err := s.parseTemplates(); err != nil {
		return nil, err
	}
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	s.mux.HandleFunc("GET /static/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") { // no directory listings
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
	s.routeAPI()
	s.routePages()
	s.routeConsole()
	return s, nil
}

// SetOps makes the server read and steer the fleet through o from now on:
// drover web calls it with an Ops on its new session after ZooKeeper
// expired the old one.
func (s *Server) SetOps(o *ops.Ops) {
	s.opsNow.Store(o)
	s.invalidate()
}

// fleetOps returns the Ops requests use now: nil before the first
// ZooKeeper session (Config.Ops), which only routes that need no
// ZooKeeper see (withoutZooKeeper).
func (s *Server) fleetOps() *ops.Ops { return s.opsNow.Load() }

// needsZooKeeper answers 503 (ErrZooKeeperDown) and reports true when the
// console has had no ZooKeeper session yet.
func (s *Server) needsZooKeeper(w http.ResponseWriter, r *http.Request) bool {
	if s.fleetOps() != nil {
		return false
	}
	s.fail(w, r, ErrZooKeeperDown)
	return true
}

// Handler returns the server's handler: every route behind size limits
// (a path, query or header past its bound is answered 414 or 431: limits.go), a Host check
// (an open console, which trusts loopback clients, answers 403 to a Host
// that is not a loopback address, localhost or a configured name: DNS
// rebinding) and cross-origin protection (a state-changing request from
// another site is answered 403, whatever its credentials; on a console
// without tokens, so is a costly read asked for by another site:
// refuseCrossSite). Every refusal goes to the refusal stream.
func (s *Server) Handler() http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		he := &httpError{status: http.StatusForbidden, msg: "cross-origin request refused"}
		s.auditRefusal(r, "", auth.Principal{}, he)
		s.fail(w, r, he)
	}))
	return securityHeaders(s.bounded(s.limitSize(s.checkHost(cop.Handler(s.refuseCrossSite(s.mux))))))
}

// checkHost refuses a request whose Host the authenticator does not
// accept (auth.Authenticator.CheckHost).
func (s *Server) checkHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.auth.CheckHost(r); err != nil {
			he := &httpError{status: http.StatusForbidden, msg: err.Error()}
			s.auditRefusal(r, "", auth.Principal{}, he)
			s.fail(w, r, he)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		if r.TLS != nil {
			hd.Set("Strict-Transport-Security", "max-age=31536000")
		}
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
		h.ServeHTTP(w, r)
	})
}

// Run samples the fleet's totals for the overview's history until ctx
// ends.
// It also reads a fresh snapshot when a request was answered from a stale
// one (Config.ServeStale).
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.SampleEvery)
	defer t.Stop()
	s.running.Store(true)
	defer s.running.Store(false)
	for {
		s.flushRefusals(ctx)
		s.sample(ctx)
		if !s.untilSample(ctx, t.C) {
			return nil
		}
	}
}

// untilSample waits for the next sample's tick, reading a fresh snapshot
// whenever a request asks for one meanwhile; false when ctx ended.
func (s *Server) untilSample(ctx context.Context, tick <-chan time.Time) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick:
			return true
		case <-s.refreshNow:
			s.refreshSnapshot(ctx)
		}
	}
}

// httpError is an error with the status to answer.
type httpError struct {
	status int
	msg    string
	// extra are members added to the JSON error ({"ids": …} of an
	// enqueue whose outcome is unknown).
	extra map[string]any
	// refusal: refused for who sent it (role, CSRF), not for what it
	// asked: recorded in the refusal stream (refusal.go).
	refusal bool
}

func (e *httpError) Error() string { return e.msg }

// Errorf returns an error that handlers registered with HandleAPI may
// return to answer status with the message.
func Errorf(status int, format string, a ...any) error {
	return &httpError{status: status, msg: fmt.Sprintf(format, a...)}
}

// statusOf maps an error to the status answered.
func statusOf(err error) int {
	var he *httpError
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		return he.status
	case errors.As(err, &mb):
		return http.StatusRequestEntityTooLarge
	}
	status := ops.StatusOf(err)
	if status == http.StatusInternalServerError && errors.Is(err, context.Canceled) {
		return 499 // the client went away
	}
	return status
}

// Input is a request's parameters: a JSON object's members (strings,
// numbers and booleans, as text) or a form's fields.
type Input map[string]string

// Get returns the parameter or "".
func (in Input) Get(k string) string { return in[k] }

// Bool reads a parameter as a boolean ("" is false).
func (in Input) Bool(k string) (bool, error) {
	v := in[k]
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, ops.ErrBadInput
	}
	return b, nil
}

// readInput parses the body (JSON or form), bounded by max bytes.
func readInput(w http.ResponseWriter, r *http.Request, max int64) (Input, error) {
	r.Body = http.MaxBytesReader(w, r.Body, max)
	in := Input{}
	ct := r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(body) {
			return nil, Errorf(http.StatusBadRequest, "request body: invalid UTF-8 (JSON text must be UTF-8)")
		}
		if len(strings.TrimSpace(string(body))) == 0 {
			return in, nil
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, Errorf(http.StatusBadRequest, "request body: want a JSON object: %v", err)
		}
		for k, v := range m {
			switch v := v.(type) {
			case string:
				in[k] = v
			case bool:
				in[k] = strconv.FormatBool(v)
			case float64:
				in[k] = strconv.FormatFloat(v, 'f', -1, 64)
			case nil:
			default:
				b, _ := json.Marshal(v)
				in[k] = string(b)
			}
		}
		return in, nil
	}
	if err := r.ParseForm(); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, mb
		}
		return nil, Errorf(http.StatusBadRequest, "request body: %v", err)
	}
	for k, v := range r.PostForm {
		if len(v) > 0 {
			in[k] = v[0]
		}
	}
	return in, nil
}

// formHeader marks a request posted by one of the console's forms.
const formHeader = "X-Drover-Form"

// wantsHTML reports whether the client is a browser page rather than an
// API client.
func wantsHTML(r *http.Request) bool {
	if r.Header.Get(formHeader) == "1" {
		return true
	}
	return !strings.HasPrefix(r.URL.Path, "/api/") && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// fail answers an error: JSON for the API, an error page for pages.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	err = s.explain(r, err)
	status := statusOf(err)
	switch {
	case status == http.StatusServiceUnavailable: // a backing service is away: expected, and maybe many
		s.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	case status >= 500:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="drover"`)
	}
	if wantsHTML(r) {
		p, _ := auth.FromContext(r.Context())
		w.WriteHeader(status)
		s.render(w, r, "error", p, map[string]any{"Status": status, "StatusText": http.StatusText(status), "Error": err.Error()})
		return
	}
	out := map[string]any{"error": err.Error(), "status": status}
	var he *httpError
	if errors.As(err, &he) {
		for k, v := range he.extra {
			out[k] = v
		}
	}
	writeJSON(w, status, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// authenticate returns the request's principal or answers 401 (API) or
// redirects to the login page (pages). A refusal is audited as action
// (a mutation's name; "" for a read).
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, action string) (auth.Principal, bool) {
	p, err := s.auth.Authenticate(r)
	if err == nil {
		return p, true
	}
	if !errors.Is(err, auth.ErrNoCredentials) && !errors.Is(err, auth.ErrBadCredentials) && !errors.Is(err, auth.ErrForeignHost) {
		// The session store did not say whether the session was ended
		// (Redis away): not the client's fault, and no refusal.
		s.fail(w, r, fmt.Errorf("check the session: %w", err))
		return auth.Principal{}, false
	}
	if wantsHTML(r) && r.Method == http.MethodGet && !s.auth.Open() && errors.Is(err, auth.ErrNoCredentials) {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return auth.Principal{}, false
	}
	if wantsHTML(r) && r.Method == http.MethodGet && !s.auth.Open() && errors.Is(err, auth.ErrBadCredentials) && r.Header.Get("Authorization") == "" {
		// A stale session cookie (expired, logged out, its token changed):
		// recorded, since a replayed cookie is worth seeing, then cleared
		// and sent to log in again rather than to a 401 page with no way
		// out (issue 41).
		s.auditRefusal(r, action, auth.Principal{}, &httpError{status: http.StatusUnauthorized, msg: "unauthorized: " + err.Error()})
		http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		http.Redirect(w, r, "/login?why=ended&next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return auth.Principal{}, false
	}
	var he *httpError
	switch {
	case s.auth.Open(), errors.Is(err, auth.ErrForeignHost):
		he = &httpError{status: http.StatusForbidden, msg: err.Error()}
	case errors.Is(err, auth.ErrNoCredentials):
		he = &httpError{status: http.StatusUnauthorized, msg: "unauthorized: log in, or send Authorization: Bearer <token>"}
	default:
		he = &httpError{status: http.StatusUnauthorized, msg: "unauthorized: " + err.Error()}
	}
	s.auditRefusal(r, action, auth.Principal{}, he)
	s.fail(w, r, he)
	return auth.Principal{}, false
}

// authorize checks p's role against need.
func authorize(p auth.Principal, need auth.Role) error {
	if p.Role.Allows(need) {
		return nil
	}
	return &httpError{status: http.StatusForbidden, refusal: true, msg: fmt.Sprintf("forbidden: this needs the %s role; %s is %s", need, p.Name, p.Role)}
}
