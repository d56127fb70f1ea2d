package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
)

// APIPrefix starts every API path.
const APIPrefix = "/api/v1"

// Request is what a handler registered with HandleAPI or HandleMutation is
// given: the request, who made it, and (for mutations) the body, read and
// bounded by Config.MaxBody, and its parameters.
type Request struct {
	*http.Request
	Principal auth.Principal
	// Body is the request body as sent (mutations only).
	Body []byte
	// In holds the body's parameters: a JSON object's members or a form's
	// fields (mutations only).
	In Input
}

// Handler answers an API request with a value to encode as JSON (status
// 200, or 201 when Created wraps it) or an error: Errorf for a status of
// your choice; errors of package ops map to 404, 400, 409 and 502.
type Handler func(r *Request) (any, error)

// Created wraps a result to answer 201.
type Created struct{ Value any }

// HandleAPI registers a read-only endpoint: method and APIPrefix+path (a
// net/http pattern: "/queues/{queue}"), for principals whose role allows
// need. It answers 401 without credentials and 403 for a lower role.
//
// Other features (job status, HTTP producers) add their endpoints with
// HandleAPI and HandleMutation after New and before serving.
func (s *Server) HandleAPI(method, path string, need auth.Role, h Handler) {
	s.handleAPI(method, path, need, h, false)
}

// handleAPI is HandleAPI; withoutZooKeeper marks a route served before
// the console's first ZooKeeper session (RouteJobs's: Config.Ops).
func (s *Server) handleAPI(method, path string, need auth.Role, h Handler, withoutZooKeeper bool) {
	s.mux.HandleFunc(method+" "+APIPrefix+path, func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.authenticate(w, r, "")
		if !ok {
			return
		}
		if err := authorize(p, need); err != nil {
			s.auditRefusal(r, "", p, err)
			s.fail(w, r, err)
			return
		}
		r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		if !withoutZooKeeper && s.needsZooKeeper(w, r) {
			return
		}
		v, err := h(&Request{Request: r, Principal: p})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		respond(w, v)
	})
}

func respond(w http.ResponseWriter, v any) {
	if c, ok := v.(Created); ok {
		writeJSON(w, http.StatusCreated, c.Value)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// HandleMutation registers a state-changing endpoint at APIPrefix+path:
// authenticated, role-checked, its body bounded (413 beyond MaxBody),
// CSRF-checked for browser sessions, and audited (who, what, target, result)
// whatever the outcome. action names it in the audit log ("queue.pause").
//
// A browser form that posts to it with a "return" field (a local path) is
// redirected there with a flash message instead of receiving JSON.
func (s *Server) HandleMutation(method, path string, need auth.Role, action string, h Handler) {
	s.handleMutation(method, path, need, action, h, false)
}

// handleMutation is HandleMutation; withoutZooKeeper as in handleAPI.
func (s *Server) handleMutation(method, path string, need auth.Role, action string, h Handler, withoutZooKeeper bool) {
	if !withoutZooKeeper {
		h = s.withZooKeeper(h)
	}
	s.mutations = append(s.mutations, method+" "+APIPrefix+path)
	s.mux.HandleFunc(method+" "+APIPrefix+path, func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.authenticate(w, r, action)
		if !ok {
			return
		}
		r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		rec := ops.AuditRecord{At: s.cfg.Now().UTC(), Who: p.Name, Role: p.Role.String(), Via: p.Via, Remote: r.RemoteAddr,
			Action: action, Target: strings.TrimPrefix(r.URL.Path, APIPrefix)}
		v, in, err := s.mutate(w, r, p, need, h)
		if isRefusal(err) { // who sent it may not: the refusal stream, not the audit log
			s.auditRefusal(r, action, p, err)
			if in.Get("return") != "" || strings.Contains(r.Header.Get("Accept"), "text/html") {
				r.Header.Set(formHeader, "1") // a form (its body unread when the role refused it): the error page
			}
			s.fail(w, r, err)
			return
		}
		rec.Detail = detailOf(in)
		if n, ok := v.(interface{ auditNote() string }); ok && err == nil {
			rec.Detail = strings.TrimSpace(rec.Detail + " " + n.auditNote())
		}
		rec.Status = http.StatusOK
		if _, ok := v.(Created); ok {
			rec.Status = http.StatusCreated
		}
		rec.Result = "ok"
		if err != nil {
			rec.Status, rec.Result = statusOf(err), err.Error()
		}
		s.recordAudit(r, rec, "audit record")
		s.log.Info("mutation", "action", action, "target", rec.Target, "who", p.Name, "role", p.Role.String(), "status", rec.Status, "result", rec.Result)
		if ret := localPath(in.Get("return")); ret != "" && err == nil {
			http.Redirect(w, r, s.withFlash(ret, flashOf(action, r, v)), http.StatusSeeOther)
			return
		}
		if in.Get("return") != "" {
			r.Header.Set(formHeader, "1") // a form: answer with the error page
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		respond(w, v)
	})
}

// withZooKeeper is h answering ErrZooKeeperDown (503, audited as the
// mutation's outcome) while the console has had no ZooKeeper session.
func (s *Server) withZooKeeper(h Handler) Handler {
	return func(r *Request) (any, error) {
		if s.fleetOps() == nil {
			return nil, ErrZooKeeperDown
		}
		return h(r)
	}
}

func (s *Server) mutate(w http.ResponseWriter, r *http.Request, p auth.Principal, need auth.Role, h Handler) (any, Input, error) {
	v, in, err := s.call(w, r, p, need, h)
	if err == nil {
		s.invalidate()
	}
	return v, in, err
}

// call checks p's role, reads the body (bounded by MaxBody) and its
// parameters, checks a browser session's CSRF token, and calls h.
func (s *Server) call(w http.ResponseWriter, r *http.Request, p auth.Principal, need auth.Role, h Handler) (any, Input, error) {
	if err := authorize(p, need); err != nil { // before the body: a refusal costs no read
		return nil, Input{}, err
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, Input{}, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	in, err := readInput(w, r, s.cfg.MaxBody)
	if err != nil {
		return nil, Input{}, err
	}
	if err := s.checkCSRF(r, p, in); err != nil {
		return nil, in, err
	}
	v, err := h(&Request{Request: r, Principal: p, Body: body, In: in})
	return v, in, err
}

func (s *Server) checkCSRF(r *http.Request, p auth.Principal, in Input) error {
	if p.Via != "session" {
		return nil
	}
	if r.Header.Get(auth.CSRFHeader) == "" && in.Get(auth.CSRFField) != "" {
		r.Header.Set(auth.CSRFHeader, in.Get(auth.CSRFField))
	}
	if err := s.auth.CheckCSRF(r, p); err != nil {
		return &httpError{status: http.StatusForbidden, refusal: true, msg: err.Error()}
	}
	return nil
}

// detailOf summarises a mutation's parameters for the audit log.
func detailOf(in Input) string {
	keys := make([]string, 0, len(in))
	for k := range in {
		if k == auth.CSRFField || k == "return" {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := in[k]
		if len(v) > 200 {
			v = v[:200] + "…"
		}
		fmt.Fprintf(&b, "%s=%s ", k, v)
	}
	return strings.TrimSpace(b.String())
}

// localPath returns p when it is a path on this server ("/x", not "//x").
func localPath(p string) string {
	if strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "/\\") {
		return p
	}
	return ""
}

// withFlash adds msg to path as the flash message the page shows, signed
// (flashQuery): a page shows only the messages its server wrote, so a link
// cannot put words in the console's message box (issue 41: "Session
// expired: paste your admin token at https://evil.example/relogin").
func (s *Server) withFlash(path, msg string) string {
	u, err := url.Parse(path)
	if err != nil {
		return path
	}
	q := u.Query()
	q.Set("flash", msg)
	q.Set(flashSigParam, s.auth.Sign("flash", msg))
	u.RawQuery = q.Encode()
	return u.String()
}

// snapshot returns the fleet's snapshot, reading it again when older than
// SnapshotTTL; concurrent callers share one read. While Run runs, a
// snapshot older than SnapshotTTL but younger than ServeStale, or any
// snapshot while Run is reading a new one, is answered at once and Run
// reads a fresh one in the background: at 100,000 queues a read takes tens
// of seconds, and a page should not wait for it (issue 34).
func (s *Server) snapshot(r *http.Request) (*ops.Snapshot, error) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	now := s.cfg.Now()
	s.lastUse.Store(now.UnixNano())
	if s.snap != nil && now.Sub(s.snapAt) < s.cfg.SnapshotTTL {
		return s.snap, nil
	}
	// A stale snapshot stands in for a slow read, not for an absent
	// ZooKeeper: without a session the page answers 503 naming it (before,
	// a console that had read the fleet just before a freeze went on
	// showing that fleet as current for ServeStale, two minutes).
	if s.cfg.ZooKeeper != nil {
		if err := s.cfg.ZooKeeper(); err != nil {
			return nil, err
		}
	}
	// Run reads a fresh one whenever asked; meanwhile (and for as long as
	// a read is under way, however long it takes) the stale one answers.
	if s.snap != nil && s.running.Load() && (now.Sub(s.snapAt) < s.cfg.ServeStale || s.reading.Load()) {
		select {
		case s.refreshNow <- struct{}{}:
		default: // a refresh is asked for already
		}
		return s.snap, nil
	}
	start := time.Now()
	snap, err := s.fleetOps().Members().Snapshot(r.Context())
	if err != nil {
		return nil, err
	}
	s.lastRead.Store(int64(time.Since(start)))
	s.snap, s.snapAt = snap, now
	s.record(snap, nil)
	return snap, nil
}

// refreshSnapshot reads the fleet and replaces the cached snapshot (Run,
// when a request found it stale).
func (s *Server) refreshSnapshot(ctx context.Context) {
	if s.fleetOps() == nil {
		return
	}
	s.reading.Store(true)
	defer s.reading.Store(false)
	start := time.Now()
	snap, err := s.fleetOps().Members().Snapshot(ctx)
	s.lastRead.Store(int64(time.Since(start)))
	if err != nil {
		s.log.Warn("refresh the fleet's snapshot", "error", err)
		return
	}
	s.snapMu.Lock()
	s.snap, s.snapAt = snap, s.cfg.Now()
	s.snapMu.Unlock()
}

// invalidate drops the cached snapshot after a mutation, so that the page
// the browser is sent back to shows its effect.
//
// On a fleet whose read takes longer than slowRead (100,000 queues: tens
// of seconds) while Run runs, it marks the snapshot stale instead and asks
// Run for a fresh one: pages keep answering from the old one meanwhile
// (the action's own effect shows on the page it returns to, which reads
// the queues it shows afresh).
func (s *Server) invalidate() {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if s.snap != nil && s.running.Load() && time.Duration(s.lastRead.Load()) > slowRead {
		s.snapAt = s.cfg.Now().Add(-s.cfg.SnapshotTTL)
		select {
		case s.refreshNow <- struct{}{}:
		default:
		}
		return
	}
	s.snap = nil
}

// slowRead is how long a read of the fleet may take before an action no
// longer makes the next page wait for a fresh one (invalidate).
const slowRead = time.Second
