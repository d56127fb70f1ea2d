package web

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/queue"
)

// A parked queue (its pause flag as a worker writes it) seen, its head's
// args edited, then moved to the dead letters through the API: each step
// checked against Redis and ZooKeeper, each mutation audited, refusals
// included.
func TestAPIParkedQueueRetryEditAndSkip(t *testing.T) {
	r := newRig(t)
	r.queueWith("pk", 2)
	ctx := context.Background()
	es, err := r.store.Log().ReadAfter(ctx, "pk", 0, 2)
	if err != nil || len(es) != 2 {
		t.Fatalf("read: %v, %d entries", err, len(es))
	}
	head := es[0]
	if err := r.zk.Pauses().Set(ctx, drover.PauseQueue, "pk", drover.Pause{By: "worker w1", At: time.Now(), Reason: "parked",
		Head: &drover.ParkedHead{ID: head.ID, Position: head.Position, Task: "t", Attempts: 3, Error: "exit 1", ExitCode: 1}}); err != nil {
		t.Fatal(err)
	}
	if pqs := decode[[]ops.ParkedQueue](t, r.want(200, "viewer", "GET", "/api/v1/parked", "")); len(pqs) != 1 || pqs[0].Pause.Head.ID != head.ID {
		t.Fatalf("parked: want pk at %s, have %+v", head.ID, pqs)
	}
	pq := decode[ops.ParkedQueue](t, r.want(200, "viewer", "GET", "/api/v1/queues/pk/parked", ""))
	if pq.Message == nil || !strings.Contains(strings.Join(strings.Fields(string(pq.Message.Envelope)), ""), `"i":1`) {
		t.Fatalf("head: want its envelope, have %+v", pq.Message)
	}
	r.want(403, "viewer", "POST", "/api/v1/queues/pk/parked/retry", `{"id":"`+head.ID+`"}`)
	r.want(409, "operator", "POST", "/api/v1/queues/pk/parked/retry", `{"id":"`+es[1].ID+`"}`) // not the head

	r.want(200, "operator", "POST", "/api/v1/queues/pk/parked/retry", `{"id":"`+head.ID+`","args":{"i":2},"keep_paused":true}`)
	mi, err := r.store.Inspector().Message(ctx, "pk", head.ID)
	if err != nil || !strings.Contains(string(mi.Raw), `"args":{"i":2}`) || mi.Position != head.Position {
		t.Fatalf("edited head: want args {\"i\":2} at position %d, have %s at %d (%v)", head.Position, mi.Raw, mi.Position, err)
	}
	if ps, _ := r.zk.Pauses().Read(ctx); ps.Queues["pk"].Head == nil {
		t.Fatal("keep_paused: want the queue still parked")
	}

	r.want(200, "operator", "POST", "/api/v1/queues/pk/parked/skip", `{"id":"`+head.ID+`"}`)
	dls, err := r.store.Dead().DeadLetters(ctx, "pk", 0, 10)
	if err != nil || len(dls) != 1 || dls[0].ID != head.ID || !strings.Contains(dls[0].Failure.Reason, "operator-user") {
		t.Fatalf("dead letters: want %s moved by operator-user, have %+v (%v)", head.ID, dls, err)
	}
	if ps, _ := r.zk.Pauses().Read(ctx); len(ps.Queues) != 0 {
		t.Fatalf("after skip: want the queue resumed, have %+v", ps.Queues)
	}
	r.want(409, "viewer", "GET", "/api/v1/queues/pk/parked", "")

	recs := decode[[]ops.AuditRecord](t, r.want(200, "viewer", "GET", "/api/v1/audit", ""))
	seen := map[string]int{}
	for _, rec := range recs {
		if strings.HasPrefix(rec.Action, "parked.") {
			seen[rec.Action+" "+rec.Result[:min(2, len(rec.Result))]]++
		}
	}
	if seen["parked.retry ok"] != 1 || seen["parked.skip ok"] != 1 || len(seen) < 3 {
		t.Fatalf("audit: want a retry, a skip and the refusals, have %v", seen)
	}
}

// session is a browser session of role: a cookie jar logged in with the
// login form, and a client that does not follow redirects.
type session struct {
	r      *rig
	client *http.Client
}

func (r *rig) login(role string) *session {
	r.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(r.http.URL+"/login", url.Values{"token": {r.tokens[role]}, "next": {"/queues"}})
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		r.t.Fatalf("login as %s: want 303, have %d", role, resp.StatusCode)
	}
	return &session{r, c}
}

// page returns the HTML of a console page.
func (s *session) page(path string) string {
	s.r.t.Helper()
	req, _ := http.NewRequest("GET", s.r.http.URL+path, nil)
	req.Header.Set("Accept", "text/html")
	resp, err := s.client.Do(req)
	if err != nil {
		s.r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		s.r.t.Fatalf("GET %s: want 200, have %d: %.500s", path, resp.StatusCode, b)
	}
	return string(b)
}

// submit posts the form of page whose button has id button, as a browser
// would: the form's hidden fields (CSRF token, return path, head id) and
// its other inputs as given in fields (a name to leave out maps to "").
// It returns the response's status and Location.
func (s *session) submit(page, button string, fields map[string]string) (int, string) {
	s.r.t.Helper()
	end := strings.Index(page, `id="`+button+`"`)
	if end < 0 {
		s.r.t.Fatalf("page: no button %s:\n%s", button, page)
	}
	start := strings.LastIndex(page[:end], "<form ")
	form := page[start:end]
	action := between(form, `action="`, `"`)
	in := url.Values{}
	for rest := form; ; {
		i := strings.Index(rest, `<input type="hidden" name="`)
		if i < 0 {
			break
		}
		rest = rest[i+len(`<input type="hidden" name="`):]
		name, _, _ := strings.Cut(rest, `"`)
		in.Set(name, html.UnescapeString(between(rest, `value="`, `"`)))
	}
	for k, v := range fields {
		if v != "" {
			in.Set(k, v)
		}
	}
	req, _ := http.NewRequest("POST", s.r.http.URL+html.UnescapeString(action), strings.NewReader(in.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := s.client.Do(req)
	if err != nil {
		s.r.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(rest, to)
	return v
}

// park writes q's pause flag as a worker parking at head does.
func (r *rig) park(q string, head queue.Entry) {
	r.t.Helper()
	if err := r.zk.Pauses().Set(context.Background(), drover.PauseQueue, q, drover.Pause{By: "worker w1", At: time.Now(), Reason: "parked",
		Head: &drover.ParkedHead{ID: head.ID, Position: head.Position, Task: "t", Attempts: 3, Error: "exit 1", ExitCode: 1}}); err != nil {
		r.t.Fatal(err)
	}
}

// The console offers what ctl and the API do on a parked queue: retry the
// head, edit its args and retry, skip it (each with keep paused), as forms
// posting to the API's parked endpoints with the session's CSRF token,
// audited; a viewer sees the head but no form, and the job view reads the
// head parked. A skip that keeps the queue paused leaves it paused, not
// parked at the message that left.
func TestConsoleResolvesAParkedQueue(t *testing.T) {
	r := newRig(t)
	r.queueWith("pk", 3)
	ctx := context.Background()
	es, err := r.store.Log().ReadAfter(ctx, "pk", 0, 3)
	if err != nil || len(es) != 3 {
		t.Fatalf("read: %v, %d entries", err, len(es))
	}
	r.park("pk", es[0])
	flag := func() (drover.Pause, bool) {
		ps, err := r.zk.Pauses().Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := ps.Queues["pk"]
		return p, ok
	}

	if pg := r.page("viewer", "/queues/pk"); !strings.Contains(pg, `id="parked-head"`) || strings.Contains(pg, `id="parked-retry"`) {
		t.Fatalf("viewer: want the parked head shown without forms, have:\n%s", pg)
	}
	op := r.login("operator")
	r.withJobs(0)
	if pg := op.page("/queues/pk?job=" + es[0].ID); !strings.Contains(pg, "<b>parked</b>") || !strings.Contains(pg, `id="job-parked"`) {
		t.Fatalf("job view of the head: want it parked, have:\n%s", pg)
	}
	pg := op.page("/queues/pk")
	for _, id := range []string{`id="parked-retry"`, `id="parked-skip"`, `id="parked-edit"`, `{&#34;i&#34;:1}</textarea>`} {
		if !strings.Contains(pg, id) {
			t.Fatalf("operator: want %s on the parked queue's page, have:\n%s", id, pg)
		}
	}

	// Edit the args and retry: the head keeps its place with the new
	// args, the queue resumes.
	if code, loc := op.submit(pg, "parked-edit", map[string]string{"args": `{"i":5}`}); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/queues/pk?flash=") {
		t.Fatalf("edit and retry: want a redirect back with a flash, have %d %s", code, loc)
	}
	mi, err := r.store.Inspector().Message(ctx, "pk", es[0].ID)
	if err != nil || !strings.Contains(string(mi.Raw), `"args":{"i":5}`) || mi.Position != es[0].Position {
		t.Fatalf("edited head: want args {\"i\":5} at position %d, have %s at %d (%v)", es[0].Position, mi.Raw, mi.Position, err)
	}
	if p, ok := flag(); ok {
		t.Fatalf("after the retry: want the queue resumed, have %+v", p)
	}

	// Retry as it is, kept paused: still parked at the head.
	r.park("pk", es[0])
	if code, _ := op.submit(op.page("/queues/pk"), "parked-retry", map[string]string{"keep_paused": "true"}); code != http.StatusSeeOther {
		t.Fatalf("retry: want 303, have %d", code)
	}
	if p, ok := flag(); !ok || p.Head == nil || p.Head.ID != es[0].ID {
		t.Fatalf("retry kept paused: want still parked at %s, have %+v", es[0].ID, p)
	}

	// Skip, kept paused: dead-lettered; paused by the operator, no head.
	if code, _ := op.submit(op.page("/queues/pk"), "parked-skip", map[string]string{"keep_paused": "true"}); code != http.StatusSeeOther {
		t.Fatalf("skip: want 303, have %d", code)
	}
	dls, err := r.store.Dead().DeadLetters(ctx, "pk", 0, 10)
	if err != nil || len(dls) != 1 || dls[0].ID != es[0].ID {
		t.Fatalf("dead letters: want %s, have %+v (%v)", es[0].ID, dls, err)
	}
	p, ok := flag()
	if !ok || p.Head != nil || p.By != "operator-user" || !strings.Contains(p.Reason, es[0].ID) {
		t.Fatalf("skip kept paused: want paused by operator-user naming no head, have %+v (paused %v)", p, ok)
	}
	r.want(409, "viewer", "GET", "/api/v1/queues/pk/parked", "")
	if pg := op.page("/queues/pk"); strings.Contains(pg, `id="parked-skip"`) || !strings.Contains(pg, `id="resume"`) {
		t.Fatalf("after skip kept paused: want Resume and no parked forms, have:\n%s", pg)
	}
	r.want(200, "operator", "POST", "/api/v1/queues/pk/resume", "")
	if p, ok := flag(); ok {
		t.Fatalf("after resume: want no flag, have %+v", p)
	}

	recs := decode[[]ops.AuditRecord](t, r.want(200, "viewer", "GET", "/api/v1/audit", ""))
	seen := map[string]int{}
	for _, rec := range recs {
		if strings.HasPrefix(rec.Action, "parked.") && rec.Via == "session" {
			seen[rec.Action+" "+rec.Result]++
		}
	}
	if seen["parked.retry ok"] != 2 || seen["parked.skip ok"] != 1 {
		t.Fatalf("audit: want two retries and a skip from the session, have %v", seen)
	}
}
