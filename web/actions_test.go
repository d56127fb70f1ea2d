package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/scheduler"
)

func TestAPIQueueListSortsFiltersAndPages(t *testing.T) {
	r := newRig(t)
	for i, n := range []int{3, 0, 7, 1} {
		r.queueWith(fmt.Sprintf("list-%d", i), n)
	}
	r.want(200, "operator", "POST", "/api/v1/queues/list-1/pause", `{"reason":"r"}`)
	pg := decode[ops.QueuePage](t, r.want(200, "viewer", "GET", "/api/v1/queues?sort=lag&order=desc&per_page=2", ""))
	if pg.Total != 4 || pg.Pages != 2 || len(pg.Queues) != 2 || pg.Queues[0].Queue != "list-2" || pg.Queues[0].Lag != 7 || pg.Queues[1].Queue != "list-0" {
		t.Fatalf("sorted by lag desc, page 1 of 2: have %+v", pg)
	}
	pg = decode[ops.QueuePage](t, r.want(200, "viewer", "GET", "/api/v1/queues?sort=lag&order=desc&per_page=2&page=2", ""))
	if len(pg.Queues) != 2 || pg.Queues[0].Queue != "list-3" || pg.Queues[1].Queue != "list-1" {
		t.Fatalf("page 2: have %+v", pg.Queues)
	}
	pg = decode[ops.QueuePage](t, r.want(200, "viewer", "GET", "/api/v1/queues?only=paused", ""))
	if pg.Total != 1 || pg.Queues[0].Queue != "list-1" || pg.Queues[0].PausedBy == nil || pg.Queues[0].PausedBy.By != "operator-user" {
		t.Fatalf("only paused: want list-1 paused by operator-user, have %+v", pg.Queues)
	}
	pg = decode[ops.QueuePage](t, r.want(200, "viewer", "GET", "/api/v1/queues?filter=ST-3", ""))
	if pg.Total != 1 || pg.Queues[0].Queue != "list-3" {
		t.Fatalf("filter: want list-3, have %+v", pg.Queues)
	}
}

func TestAPIMessagesAndActions(t *testing.T) {
	r := newRig(t)
	r.queueWith("a", 2)
	ctx := context.Background()
	pending := decode[[]ops.Message](t, r.want(200, "viewer", "GET", "/api/v1/queues/a/pending", ""))
	if len(pending) != 2 || pending[0].Position >= pending[1].Position || len(pending[0].Envelope) == 0 {
		t.Fatalf("pending: want 2 in position order with envelopes, have %+v", pending)
	}
	next := decode[[]ops.Message](t, r.want(200, "viewer", "GET", fmt.Sprintf("/api/v1/queues/a/pending?after=%d", pending[0].Position), ""))
	if len(next) != 1 || next[0].ID != pending[1].ID {
		t.Fatalf("pending after the first: want the second, have %+v", next)
	}

	// Delayed: revoke one, run another now.
	d1, _ := r.store.Producer().EnqueueIn(ctx, &drover.Message{Queue: "a", Task: "d1"}, time.Hour)
	d2, _ := r.store.Producer().EnqueueIn(ctx, &drover.Message{Queue: "a", Task: "d2"}, 2*time.Hour)
	delayed := decode[[]ops.Message](t, r.want(200, "viewer", "GET", "/api/v1/queues/a/delayed", ""))
	if len(delayed) != 2 || delayed[0].ID != d1.ID || delayed[0].Due == nil {
		t.Fatalf("delayed: want d1 first with its due time, have %+v", delayed)
	}
	r.want(200, "operator", "POST", "/api/v1/queues/a/delayed/"+d1.ID+"/revoke", "")
	r.want(404, "operator", "POST", "/api/v1/queues/a/delayed/"+d1.ID+"/revoke", "")
	r.want(200, "operator", "POST", "/api/v1/queues/a/delayed/"+d2.ID+"/run", "")
	m := decode[ops.Message](t, r.want(200, "viewer", "GET", "/api/v1/queues/a/messages/"+d2.ID, ""))
	if m.State != "pending" || m.Position == 0 {
		t.Fatalf("after run-now: want d2 pending, have %+v", m)
	}
	r.want(404, "viewer", "GET", "/api/v1/queues/a/messages/"+d1.ID, "")

	// Dead letters: retry one, purge the other.
	var dead []string
	for i := 0; i < 2; i++ {
		res, _ := r.store.Producer().Enqueue(ctx, &drover.Message{Queue: "a", Task: "bad"})
		entries, _ := r.store.Log().ReadAfter(ctx, "a", res.Position-1, 1)
		if err := r.store.Dead().Kill(ctx, "a", res.ID, entries[0].Raw, drover.Failure{Reason: "exit status 2", ExitCode: 2, StderrTail: "boom"}); err != nil {
			t.Fatal(err)
		}
		dead = append(dead, res.ID)
	}
	dl := decode[[]ops.Message](t, r.want(200, "viewer", "GET", "/api/v1/queues/a/dead", ""))
	if len(dl) != 2 || dl[0].Failure == nil || dl[0].Failure.StderrTail != "boom" {
		t.Fatalf("dead: want 2 with the failure, have %+v", dl)
	}
	r.want(200, "operator", "POST", "/api/v1/queues/a/dead/"+dead[0]+"/retry", "")
	r.want(200, "admin", "POST", "/api/v1/queues/a/dead/"+dead[1]+"/purge", "")
	q := decode[ops.QueueDetail](t, r.want(200, "viewer", "GET", "/api/v1/queues/a", ""))
	if q.Dead != 0 || q.Lag != 4 || q.Config == nil {
		t.Fatalf("after retry and purge: want no dead, lag 4 (2 + run-now + retried), and the config; have dead=%d lag=%d", q.Dead, q.Lag)
	}

	// Offset reset: the dry run changes nothing, the reset does.
	pv := decode[ops.ResetPreview](t, r.want(200, "admin", "POST", "/api/v1/queues/a/offset", `{"to":"latest","dry_run":true}`))
	if !pv.DryRun || pv.Before != 4 || pv.Run != 0 {
		t.Fatalf("dry run to latest: want 4 before, 0 to run, have %+v", pv)
	}
	if q := decode[ops.QueueDetail](t, r.want(200, "viewer", "GET", "/api/v1/queues/a", "")); q.Lag != 4 {
		t.Fatalf("after a dry run: want lag 4, have %d", q.Lag)
	}
	r.want(200, "admin", "POST", "/api/v1/queues/a/offset", `{"to":"latest"}`)
	if q := decode[ops.QueueDetail](t, r.want(200, "viewer", "GET", "/api/v1/queues/a", "")); q.Lag != 0 {
		t.Fatalf("after a reset to latest: want lag 0, have %d", q.Lag)
	}
	pv = decode[ops.ResetPreview](t, r.want(200, "admin", "POST", "/api/v1/queues/a/offset", `{"to":"earliest","dry_run":true}`))
	if pv.Run != 4 {
		t.Fatalf("dry run to earliest: want 4 to run again, have %+v", pv)
	}

	// Schedules: trigger, disable, enable.
	def := scheduler.Definition{Name: "s1", Queue: "a", Task: "rep", Schedule: scheduler.Spec{Type: scheduler.TypeInterval, Every: time.Hour}}
	if err := scheduler.NewManager(r.store.Schedules()).Add(ctx, def); err != nil {
		t.Fatal(err)
	}
	res := decode[map[string]any](t, r.want(200, "operator", "POST", "/api/v1/schedules/s1/trigger", ""))
	id, _ := res["id"].(string)
	if !strings.HasPrefix(id, "sched:s1:manual-") {
		t.Fatalf("trigger: want a manual id, have %v", res)
	}
	if m := decode[ops.Message](t, r.want(200, "viewer", "GET", "/api/v1/queues/a/messages/"+url.PathEscape(id), "")); m.State != "pending" {
		t.Fatalf("the triggered job: want pending, have %+v", m)
	}
	r.want(200, "operator", "POST", "/api/v1/schedules/s1/disable", "")
	if s := decode[ops.Schedule](t, r.want(200, "viewer", "GET", "/api/v1/schedules/s1", "")); s.State != scheduler.StateDisabled {
		t.Fatalf("after disable: want disabled, have %s", s.State)
	}
	r.want(200, "operator", "PUT", "/api/v1/schedules/s2", `{"name":"s2","queue":"a","task":"x","schedule":{"type":"interval","every":"30s"}}`)
	if list := decode[[]ops.Schedule](t, r.want(200, "viewer", "GET", "/api/v1/schedules", "")); len(list) != 2 {
		t.Fatalf("schedules: want 2, have %d", len(list))
	}
}

// TestBrowserSessionNeedsCSRFAndSameOrigin logs in with a form, then posts
// a mutation with the session: without the CSRF token 403, from another
// origin 403, with the token the redirect back.
func TestBrowserSessionNeedsCSRFAndSameOrigin(t *testing.T) {
	r := newRig(t)
	r.queueWith("c", 1)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(r.http.URL+"/login", url.Values{"token": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("login with a wrong token: want 401, have %d", resp.StatusCode)
	}
	resp, err = client.PostForm(r.http.URL+"/login", url.Values{"token": {r.tokens["operator"]}, "next": {"/queues"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/queues" {
		t.Fatalf("login: want a redirect to /queues, have %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	post := func(form url.Values, header map[string]string) *http.Response {
		req, _ := http.NewRequest("POST", r.http.URL+"/api/v1/queues/c/pause", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post(url.Values{"return": {"/queues/c"}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("session post without a CSRF token: want 403, have %d", resp.StatusCode)
	}
	// The page carries the token.
	req, _ := http.NewRequest("GET", r.http.URL+"/queues/c", nil)
	req.Header.Set("Accept", "text/html")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		page.Write(buf[:n])
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	_, rest, ok := strings.Cut(page.String(), `name="csrf_token" value="`)
	if !ok {
		t.Fatalf("queue page: want a csrf_token field, have:\n%.2000s", page.String())
	}
	csrf, _, _ := strings.Cut(rest, `"`)
	if resp := post(url.Values{"csrf_token": {csrf}, "return": {"/queues/c"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site post with the token: want 403, have %d", resp.StatusCode)
	}
	if d := decode[ops.QueueDetail](t, r.want(200, "viewer", "GET", "/api/v1/queues/c", "")); d.Paused {
		t.Fatal("a refused post paused the queue")
	}
	resp = post(url.Values{"csrf_token": {csrf}, "return": {"/queues/c"}, "reason": {"form"}}, map[string]string{"Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/queues/c?flash=") {
		t.Fatalf("same-origin post with the token: want a redirect back with a flash, have %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if d := decode[ops.QueueDetail](t, r.want(200, "viewer", "GET", "/api/v1/queues/c", "")); !d.Paused || d.PausedBy.Reason != "form" {
		t.Fatalf("after the form post: want c paused for \"form\", have %+v", d.PausedBy)
	}
	// An unauthenticated page request is sent to the login page.
	req, _ = http.NewRequest("GET", r.http.URL+"/queues", nil)
	req.Header.Set("Accept", "text/html")
	resp, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("a page without a session: want a redirect to /login, have %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// An owned queue's row names its owner in the list, and only=unowned leaves
// it out (the list stored each row before filling in its owner, so every
// queue read as unowned).
func TestAPIQueueListNamesOwners(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.queueWith("held", 1)
	r.queueWith("free", 1)
	el, err := r.zk.Group().Election(coordinator.ElectionRebalance)
	if err != nil {
		t.Fatal(err)
	}
	lead, err := el.Campaign(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.zk.Assignments().NewWriter(ctx, lead)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx, drover.Assignment{Queues: map[string]string{"held": "m1", "free": "m1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.zk.Claims().Claim(ctx, "held", coordinator.Owner{Member: "m1"}); err != nil {
		t.Fatal(err)
	}
	pg := decode[ops.QueuePage](t, r.want(200, "viewer", "GET", "/api/v1/queues", ""))
	if len(pg.Queues) != 2 || pg.Queues[1].Queue != "held" || pg.Queues[1].Owner != "m1" || !pg.Queues[1].Owned || pg.Queues[0].Owner != "" {
		t.Fatalf("want free unowned and held owned by m1, have %+v", pg.Queues)
	}
	pg = decode[ops.QueuePage](t, r.want(200, "viewer", "GET", "/api/v1/queues?only=unowned", ""))
	if pg.Total != 1 || pg.Queues[0].Queue != "free" {
		t.Fatalf("only unowned: want free, have %+v", pg.Queues)
	}
}

// A dead letter whose envelope carries the earlier attempts' errors shows
// each of them, in the API and on the message page, not only the last.
func TestMessageShowsEveryAttemptsError(t *testing.T) {
	r := newRig(t)
	r.queueWith("hist", 0)
	ctx := context.Background()
	res, err := r.store.Producer().Enqueue(ctx, &drover.Message{Queue: "hist", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	history, _ := json.Marshal([]drover.Failure{{Reason: "first failure", ExitCode: 11}, {Reason: "second failure", ExitCode: 12}})
	m := &drover.Message{ID: res.ID, Queue: "hist", Task: "t", Attempt: 2, Extra: map[string]json.RawMessage{drover.AttemptErrorsField: history}}
	if err := r.store.Log().DeadLetter(ctx, "hist", drover.DeadLetter{Message: m, Failure: drover.Failure{Reason: "final failure", ExitCode: 13}}); err != nil {
		t.Fatal(err)
	}
	got := decode[ops.Message](t, r.want(200, "viewer", "GET", "/api/v1/queues/hist/messages/"+res.ID, ""))
	if len(got.Attempts) != 2 || got.Attempts[0].ExitCode != 11 || got.Attempts[1].Reason != "second failure" || got.Failure == nil || got.Failure.ExitCode != 13 {
		t.Fatalf("want two earlier attempts (11, 12) and the final failure 13, have %+v", got)
	}
	page := r.want(200, "viewer", "GET", "/queues/hist/messages/"+res.ID, "")
	for _, s := range []string{`id="attempts"`, "first failure", "second failure", "final failure"} {
		if !strings.Contains(page, s) {
			t.Fatalf("message page: want %q, have:\n%s", s, page)
		}
	}
}
