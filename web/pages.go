package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/ops"
)

// pageData is what every template is given.
type pageData struct {
	Title     string
	Nav       string
	P         auth.Principal
	CSRF      string
	Open      bool
	Flash     string
	Refresh   int // seconds; 0 for none
	Path      string
	Data      any
	CSRFField string
}

// bulkButtons is what the bulk-buttons template is given.
type bulkButtons struct {
	Page pageData
	ID   string
}

// Can reports whether the page's principal may take actions that need
// role ("operator", "admin"): templates offer only those (issue 34).
func (d pageData) Can(role string) bool {
	need, err := auth.ParseRole(role)
	return err == nil && d.P.Role.Allows(need)
}

var funcs = template.FuncMap{
	"chart": chart,
	"resetChange": func(before, after int64) string {
		switch {
		case after == before:
			return fmt.Sprintf("No change in what runs: %d message(s) before and after.", before)
		case after > before:
			return fmt.Sprintf("%d message(s) that ran already will run again.", after-before)
		}
		return fmt.Sprintf("%d message(s) waiting now will be skipped and never run.", before-after)
	},
	"tputSeries": func(h []sample) []point { return knownSeries(h, func(s sample) float64 { return s.Throughput }) },
	"failSeries": func(h []sample) []point { return knownSeries(h, func(s sample) float64 { return s.Failures }) },
	"lagSeries": func(h []sample) []point {
		out := make([]point, len(h))
		for i, s := range h {
			out[i] = point{s.At, float64(s.Lag)}
		}
		return out
	},
	"age": func(sec float64) string { return fmtAge(time.Duration(sec * float64(time.Second))) },
	"since": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return fmtAge(time.Since(t))
	},
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"tsp": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"pos": func(p drover.Position) string {
		if p == 0 {
			return "—"
		}
		return time.UnixMicro(int64(p)).UTC().Format("15:04:05.000000") + " (" + strconv.FormatInt(int64(p), 10) + ")"
	},
	"pretty": func(raw json.RawMessage) string {
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") != nil {
			return string(raw)
		}
		return b.String()
	},
	"spark": sparkline,
	// bulk hands the bulk-buttons template (queues.html) the page, for
	// Can, and the prefix of its buttons' ids.
	"bulk": func(page pageData, id string) bulkButtons { return bulkButtons{page, id} },
	"lags": func(h []sample) []float64 {
		out := make([]float64, len(h))
		for i, s := range h {
			out[i] = float64(s.Lag)
		}
		return out
	},
	"tput": func(h []sample) []float64 {
		var out []float64
		for _, s := range h {
			if s.Throughput >= 0 {
				out = append(out, s.Throughput)
			}
		}
		return out
	},
	"lastTput": func(h []sample) string {
		for i := len(h) - 1; i >= 0; i-- {
			if h[i].Throughput >= 0 {
				return fmt.Sprintf("%.1f/s", h[i].Throughput)
			}
		}
		return "—"
	},
	"qs": func(base url.Values, kv ...string) string {
		v := url.Values{}
		for k, vs := range base {
			v[k] = vs
		}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v.Encode()
	},
	"add": func(a, b int) int { return a + b },
	"cond": func(c bool, a, b string) string {
		if c {
			return a
		}
		return b
	},
	"esc":  url.PathEscape,
	"join": strings.Join,
}

func fmtAge(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func (s *Server) parseTemplates() error {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	s.tmpl = map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return fmt.Errorf("web: template %s: %w", n, err)
		}
		s.tmpl[base] = t
	}
	return nil
}

// render executes the page template name inside the layout.
func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, p auth.Principal, data any) {
	d := pageData{Title: name, Nav: name, P: p, CSRF: s.auth.CSRFToken(p), CSRFField: auth.CSRFField, Open: s.auth.Open(),
		Flash: s.flashQuery(r), Path: withoutFlash(r.URL), Data: data}
	if ps, ok := data.(interface{ refresh() int }); ok {
		d.Refresh = ps.refresh()
	}
	if r.URL.Query().Get("refresh") == "0" {
		d.Refresh = 0
	}
	var buf bytes.Buffer
	t, ok := s.tmpl[name]
	if !ok {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	if err := t.ExecuteTemplate(&buf, "layout", d); err != nil {
		s.log.Error("render page", "page", name, "error", err)
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(buf.Bytes())
}

// page registers a GET page for principals whose role allows need.
func (s *Server) page(pattern, name string, need auth.Role, data func(r *Request) (any, error)) {
	s.mux.HandleFunc("GET "+pattern, func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set(formHeader, "1")
		p, ok := s.authenticate(w, r, "")
		if !ok {
			return
		}
		r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		if err := authorize(p, need); err != nil {
			s.auditRefusal(r, "", p, err)
			s.fail(w, r, err)
			return
		}
		if s.needsZooKeeper(w, r) {
			return
		}
		d, err := data(&Request{Request: r, Principal: p})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.render(w, r, name, p, d)
	})
}

// refreshing marks page data that reloads itself every few seconds.
type refreshing struct{ every int }

func (r refreshing) refresh() int { return r.every }

type overviewPage struct {
	refreshing
	Overview
}

type queuesPage struct {
	refreshing
	ops.QueuePage
	Query  ops.QueueQuery
	Params url.Values
	Sorts  []string
	// Match is the prefix or pattern searched (?match=): the page then
	// lists the matches read afresh, not the fleet's snapshot.
	Match string
	// View names the preset shown: lagging, oldest, failing, paused.
	View string
	// Starred: a row is marked as enqueued to but not configured.
	Starred bool
	// At is when the rows were read.
	At time.Time
}

type queuePage struct {
	refreshing
	Q       *ops.QueueDetail
	Pending []ops.Message
	Delayed []ops.Message
	Dead    []ops.Message
	// Running holds the pending messages running now, by id.
	Running map[string]ops.RunningTask
	// Recent: recently finished jobs, and those retrying with their last
	// error.
	Recent ops.Recent
	Config string
	// JobID and Job: the job looked up by id (?job=), when asked.
	JobID  string
	Job    *drover.JobStatus
	JobErr string
	// ParkedArgs: the args of the head a parked queue is parked at (JSON),
	// for the form that edits them; "" when the queue is not parked or the
	// head's envelope cannot be read.
	ParkedArgs string
}

// Names lists the page's queues, comma-separated: the selection of the
// "every row shown" bulk form.
func (p queuesPage) Names() string {
	names := make([]string, len(p.Queues))
	for i, q := range p.Queues {
		names[i] = q.Queue
	}
	return strings.Join(names, ",")
}

type membersPage struct {
	refreshing
	Members []ops.MemberRow
}

type memberPage struct {
	refreshing
	Name   string
	State  string
	Err    string
	Parsed *ops.MemberState
}

type resetPage struct {
	Queue   string
	To      string
	Preview ops.ResetPreview
}

func (s *Server) routePages() {
	s.mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		// The message is chosen by a code, never taken from the query: a
		// link must not put words on the login page (issue 41).
		s.render(w, r, "login", auth.Principal{}, map[string]string{"Next": localPath(r.URL.Query().Get("next")), "Error": loginNotes[r.URL.Query().Get("why")]})
	})
	s.mux.HandleFunc("POST /login", s.login)
	s.mux.HandleFunc("POST /logout", func(w http.ResponseWriter, r *http.Request) {
		p, _ := s.auth.Authenticate(r) // a bad or missing session: nothing to end
		c, err := s.auth.Logout(r.Context(), p)
		http.SetCookie(w, c) // cleared in the browser whatever happened to the revocation
		if err != nil {      // the cookie's copies stay valid: say so rather than pretend
			s.log.Error("logout: the session's revocation was not stored", "who", p.Name, "error", err)
			r.Header.Set(formHeader, "1")
			s.fail(w, r, fmt.Errorf("logout: the session could not be ended for every console server (log out again): %w", err))
			return
		}
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})
	s.page("/{$}", "overview", auth.Viewer, func(r *Request) (any, error) {
		snap, err := s.snapshot(r.Request)
		if err != nil {
			return nil, err
		}
		return overviewPage{refreshing{5}, s.overview(snap)}, nil
	})
	s.page("/queues", "queues", auth.Viewer, func(r *Request) (any, error) {
		q, err := queueQuery(r)
		if err != nil {
			return nil, err
		}
		params := url.Values{}
		for k, v := range r.URL.Query() {
			if k != "flash" && k != flashSigParam {
				params[k] = v
			}
		}
		view := r.URL.Query().Get("view")
		var pg ops.QueuePage
		at := s.cfg.Now()
		if m := strings.TrimSpace(r.URL.Query().Get("match")); m != "" {
			if pg, err = s.fleetOps().Find().Queues(r.Context(), ops.Match(m), q.Page, q.PerPage); err != nil {
				return nil, err
			}
		} else {
			snap, err := s.snapshot(r.Request)
			if err != nil {
				return nil, err
			}
			if pg, err = snap.Select(q); err != nil {
				return nil, err
			}
			at = snap.At
		}
		starred := false
		for _, row := range pg.Queues {
			starred = starred || !row.Configured
		}
		return queuesPage{refreshing{5}, pg, q, params, ops.SortKeys, strings.TrimSpace(r.URL.Query().Get("match")), view, starred, at}, nil
	})
	s.page("/queues/{queue}", "queue", auth.Viewer, func(r *Request) (any, error) {
		q := r.PathValue("queue")
		d, err := s.fleetOps().Queues().Queue(r.Context(), q)
		if err != nil {
			return nil, err
		}
		pg := queuePage{refreshing: refreshing{5}, Q: d}
		if id := r.URL.Query().Get("job"); id != "" && s.jobs != nil {
			pg.JobID = id
			pg.refreshing = refreshing{} // keep the answer on screen
			js, err := s.jobs.Lookup.Job(r.Context(), q, id)
			if err != nil {
				pg.JobErr = err.Error()
			} else {
				pg.Job = &js
			}
		}
		if p := d.PausedBy; d.Paused && p != nil && p.Head != nil {
			pg.ParkedArgs = s.parkedArgs(r.Context(), q, p.Head.ID)
		}
		if pg.Pending, err = s.fleetOps().Messages().Pending(r.Context(), q, 0, 20); err != nil {
			return nil, err
		}
		ids := make([]string, len(pg.Pending))
		for i, m := range pg.Pending {
			ids[i] = m.ID
		}
		pg.Running = s.fleetOps().Members().RunningIn(r.Context(), d.Owner, q, ids)
		if pg.Recent, err = s.fleetOps().Messages().Recent(r.Context(), q, 20); err != nil {
			return nil, err
		}
		if pg.Delayed, err = s.fleetOps().Messages().Delayed(r.Context(), q, 0, 20); err != nil {
			return nil, err
		}
		if pg.Dead, err = s.fleetOps().Messages().Dead(r.Context(), q, 0, 20); err != nil {
			return nil, err
		}
		if d.Config != nil {
			b, _ := json.MarshalIndent(d.Config, "", "  ")
			pg.Config = string(b)
		}
		return pg, nil
	})
	s.page("/queues/{queue}/messages/{id}", "message", auth.Viewer, func(r *Request) (any, error) {
		m, err := s.fleetOps().Messages().Message(r.Context(), r.PathValue("queue"), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return map[string]any{"Queue": r.PathValue("queue"), "M": m}, nil
	})
	s.page("/queues/{queue}/reset", "reset", auth.Admin, func(r *Request) (any, error) {
		to := r.URL.Query().Get("to")
		target, err := ops.ParseResetTarget(to)
		if err != nil {
			return nil, err
		}
		pv, err := s.fleetOps().Queues().ResetOffset(r.Context(), r.PathValue("queue"), target, r.Principal.Name, true)
		if err != nil {
			return nil, err
		}
		return resetPage{Queue: r.PathValue("queue"), To: to, Preview: pv}, nil
	})
	s.page("/members", "members", auth.Viewer, func(r *Request) (any, error) {
		snap, err := s.snapshot(r.Request)
		if err != nil {
			return nil, err
		}
		return membersPage{refreshing{5}, snap.Members}, nil
	})
	s.page("/members/{member}", "member", auth.Viewer, func(r *Request) (any, error) {
		pg := memberPage{refreshing: refreshing{5}, Name: r.PathValue("member")}
		raw, err := s.fleetOps().Members().State(r.Context(), pg.Name)
		if ops.IsNotFound(err) {
			return nil, err
		}
		if err != nil {
			pg.Err = err.Error()
		} else {
			var b bytes.Buffer
			json.Indent(&b, raw, "", "  ")
			pg.State = b.String()
			var ms ops.MemberState
			if json.Unmarshal(raw, &ms) == nil && ms.Worker.Member != "" {
				pg.Parsed = &ms
			}
		}
		return pg, nil
	})
	s.routeFamiliesPage() // api_families.go
	s.page("/schedules", "schedules", auth.Viewer, func(r *Request) (any, error) {
		return s.fleetOps().Schedules().List(r.Context())
	})
	s.page("/audit", "audit", auth.Viewer, func(r *Request) (any, error) {
		offset, err := queryInt(r, "offset", 0)
		if err != nil {
			return nil, err
		}
		mutations, err := s.fleetOps().Audit().Records(r.Context(), offset, 200)
		if err != nil {
			return nil, err
		}
		refusals, err := s.fleetOps().Audit().Refusals(r.Context(), 0, 100)
		return auditPage{Mutations: mutations, Refusals: refusals}, err
	})
}

// auditPage is /audit's data: the mutations (a page of them) and the
// latest refusals (the refusal stream, apart: refusal.go).
type auditPage struct {
	Mutations, Refusals []ops.AuditRecord
}

// login checks the posted token and sets the session cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	next := localPath(r.PostFormValue("next"))
	if next == "" || strings.HasPrefix(next, "/login") {
		next = "/"
	}
	if s.auth.Open() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	c, p, err := s.auth.Login(r.Context(), r.PostFormValue("token"))
	rec := ops.AuditRecord{At: s.cfg.Now().UTC(), Who: p.Name, Role: p.Role.String(), Via: "session", Remote: r.RemoteAddr, Action: "login", Result: "ok", Status: http.StatusSeeOther}
	if err != nil && !errors.Is(err, auth.ErrBadCredentials) { // the revocation store: not the client's fault
		if errors.Is(err, auth.ErrTooManyRevoked) {
			err = &httpError{status: http.StatusServiceUnavailable, msg: err.Error()}
		}
		r.Header.Set(formHeader, "1")
		s.fail(w, r, err)
		return
	}
	if err != nil {
		rec.Who, rec.Role, rec.Via, rec.Result, rec.Status = "anonymous", "none", "none", "unknown token", http.StatusUnauthorized
		s.recordRefusal(r, rec) // anyone can fail a login: the refusal stream
		w.WriteHeader(http.StatusUnauthorized)
		s.render(w, r, "login", auth.Principal{}, map[string]string{"Next": next, "Error": "Unknown token."})
		return
	}
	s.recordAudit(r, rec, "audit record of a login")
	http.SetCookie(w, c)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// loginNotes are the login page's messages, by the code of ?why=.
var loginNotes = map[string]string{
	"ended": "Your session has ended (it expired, was logged out, or its token changed): log in again.",
}

// knownSeries is the points of h where rate (a per-second figure, -1 when
// unknown) is known.
func knownSeries(h []sample, rate func(sample) float64) []point {
	var out []point
	for _, s := range h {
		if r := rate(s); r >= 0 {
			out = append(out, point{s.At, r})
		}
	}
	return out
}
