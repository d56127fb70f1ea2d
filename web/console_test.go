package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
)

// configure creates queues without messages, in one batch.
func (r *rig) configure(names ...string) {
	r.t.Helper()
	var cfgs []drover.QueueConfig
	for _, q := range names {
		cfgs = append(cfgs, drover.QueueConfig{Name: q, Tasks: map[string]drover.TaskRoute{"*": {Command: []string{"/bin/true"}}}})
	}
	if _, err := r.zk.Queues().CreateMany(context.Background(), cfgs); err != nil {
		r.t.Fatal(err)
	}
}

// page fetches a console page as role (API token) and returns its HTML.
func (r *rig) page(role, path string) string {
	r.t.Helper()
	req, _ := http.NewRequest("GET", r.http.URL+path, nil)
	req.Header.Set("Accept", "text/html")
	req.Header.Set("Authorization", "Bearer "+r.tokens[role])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if resp.StatusCode != 200 {
		r.t.Fatalf("GET %s as %s: want 200, have %d: %.500s", path, role, resp.StatusCode, b.String())
	}
	return b.String()
}

// A bulk pause by prefix pauses exactly the matching queues, is one audit
// record with its count and match, and the pause flags (what `ctl status`
// reads) agree; a bulk resume by names undoes part of it.
func TestBulkPauseByPrefixIsAuditedOnce(t *testing.T) {
	r := newRig(t)
	var names []string
	for i := range 30 {
		names = append(names, fmt.Sprintf("tenant-%02d", i))
	}
	r.configure(append(names, "other-1", "tenantless")...)
	body := r.want(200, "operator", "POST", "/api/v1/bulk/pause", `{"match":"tenant-","reason":"maintenance"}`)
	res := decode[bulkAnswer](t, body)
	if res.Selected != 30 || res.Changed != 30 {
		t.Fatalf("bulk pause of tenant-: want 30 selected and paused, have %+v", res)
	}
	ps, err := r.zk.Pauses().Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Queues) != 30 || ps.Queues["tenant-07"].Reason != "maintenance" || ps.Queues["tenant-07"].By != "operator-user" {
		t.Fatalf("pause flags: want the 30 tenant- queues paused by operator-user, have %d: %+v", len(ps.Queues), ps.Queues["tenant-07"])
	}
	if _, ok := ps.Queues["tenantless"]; ok {
		t.Fatal("tenantless does not start with tenant- and was paused")
	}
	recs, err := r.srv.fleetOps().Audit().Records(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	bulk := 0
	for _, rec := range recs {
		if rec.Action == "bulk.pause" {
			bulk++
			if !strings.Contains(rec.Detail, "selected 30 queue(s)") || !strings.Contains(rec.Detail, `match="tenant-"`) {
				t.Errorf("bulk.pause audit detail: want the count and the match, have %q", rec.Detail)
			}
		}
		if rec.Action == "queue.pause" {
			t.Errorf("a bulk pause wrote a per-queue audit record: %+v", rec)
		}
	}
	if bulk != 1 {
		t.Fatalf("want one bulk.pause audit record, have %d", bulk)
	}
	// Resume two by name.
	res = decode[bulkAnswer](t, r.want(200, "operator", "POST", "/api/v1/bulk/resume", `{"queues":["tenant-01","tenant-02"]}`))
	if res.Changed != 2 {
		t.Fatalf("bulk resume by name: want 2, have %+v", res)
	}
	if ps, _ = r.zk.Pauses().Read(context.Background()); len(ps.Queues) != 28 {
		t.Fatalf("after resuming 2: want 28 paused, have %d", len(ps.Queues))
	}
	// A viewer may not; an unknown name and an empty selection are refused;
	// every refusal is audited.
	r.want(403, "viewer", "POST", "/api/v1/bulk/pause", `{"match":"tenant-"}`)
	r.want(404, "operator", "POST", "/api/v1/bulk/pause", `{"queues":"nosuch"}`)
	r.want(400, "operator", "POST", "/api/v1/bulk/pause", `{}`)
	r.want(404, "operator", "POST", "/api/v1/bulk/pause", `{"match":"zzz"}`)
	if recs, err = r.srv.fleetOps().Audit().Records(context.Background(), 0, 100); err != nil {
		t.Fatal(err)
	}
	refusals, err := r.srv.fleetOps().Audit().Refusals(context.Background(), 0, 100) // the viewer's 403
	if err != nil {
		t.Fatal(err)
	}
	recs = append(recs, refusals...)
	refused := 0
	for _, rec := range recs {
		if rec.Action == "bulk.pause" && rec.Result != "ok" {
			refused++
		}
	}
	if refused != 4 {
		t.Fatalf("want the 4 refused bulk pauses audited, have %d", refused)
	}
}

// Bulk dead-letter actions: retry puts every dead letter of the selection
// back, purge (admin only) deletes them.
func TestBulkDeadLetters(t *testing.T) {
	r := newRig(t)
	r.configure("d-1", "d-2", "d-3")
	ctx := context.Background()
	for _, q := range []string{"d-1", "d-2"} {
		for i := range 2 {
			m := &drover.Message{Queue: q, Task: "t", ID: fmt.Sprintf("%s-%d", q, i)}
			if err := r.store.Log().DeadLetter(ctx, m.Queue, drover.DeadLetter{ID: m.ID, Message: m, Failure: drover.Failure{Reason: "boom", FailedAt: time.Now()}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	res := decode[bulkAnswer](t, r.want(200, "operator", "POST", "/api/v1/bulk/retry-dead", `{"match":"d-"}`))
	if res.Changed != 4 || res.Failed != 0 {
		t.Fatalf("bulk retry: want 4 dead letters put back, have %+v", res)
	}
	for _, q := range []string{"d-1", "d-2"} {
		if d := decode[ops.QueueDetail](t, r.want(200, "viewer", "GET", "/api/v1/queues/"+q, "")); d.Dead != 0 || d.Lag != 2 {
			t.Fatalf("%s after bulk retry: want 0 dead and 2 pending, have dead %d lag %d", q, d.Dead, d.Lag)
		}
	}
	m := &drover.Message{Queue: "d-3", Task: "t", ID: "x"}
	if err := r.store.Log().DeadLetter(ctx, m.Queue, drover.DeadLetter{ID: m.ID, Message: m, Failure: drover.Failure{Reason: "boom", FailedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	r.want(403, "operator", "POST", "/api/v1/bulk/purge-dead", `{"queues":"d-3"}`)
	if res = decode[bulkAnswer](t, r.want(200, "admin", "POST", "/api/v1/bulk/purge-dead", `{"queues":"d-3"}`)); res.Changed != 1 {
		t.Fatalf("bulk purge: want 1, have %+v", res)
	}
}

// Find reads only the matches: a prefix and a pattern, paged.
func TestFindQueuesByPrefixAndPattern(t *testing.T) {
	r := newRig(t)
	r.configure("acme-emails", "acme-sms", "beta-emails", "beta-sms", "acme2-emails")
	r.queueWith("acme-x", 2) // enqueued to, not configured... then configured by queueWith; still found
	pg := decode[ops.QueuePage](t, r.want(200, "viewer", "GET", "/api/v1/find?match=acme-", ""))
	var got []string
	for _, q := range pg.Queues {
		got = append(got, q.Queue)
	}
	if pg.Total != 3 || strings.Join(got, ",") != "acme-emails,acme-sms,acme-x" {
		t.Fatalf("find acme-: want acme-emails, acme-sms, acme-x, have %d %v", pg.Total, got)
	}
	if pg.Queues[2].Lag != 2 {
		t.Fatalf("find: want acme-x read in full (lag 2), have %+v", pg.Queues[2])
	}
	pg = decode[ops.QueuePage](t, r.want(200, "viewer", "GET", "/api/v1/find?match="+url.QueryEscape("*-emails")+"&per_page=2&page=2", ""))
	if pg.Total != 3 || len(pg.Queues) != 1 || pg.Queues[0].Queue != "beta-emails" {
		t.Fatalf("find *-emails page 2 of 2: want beta-emails, have %+v", pg)
	}
	r.want(400, "viewer", "GET", "/api/v1/find?match="+url.QueryEscape("[x"), "")
	if html := r.page("viewer", "/queues?match=beta"); !strings.Contains(html, `data-queue="beta-sms"`) || strings.Contains(html, `data-queue="acme-sms"`) {
		t.Fatal("queues page ?match=beta: want beta-sms and not acme-sms")
	}
}

// Pages offer only what the role may do; flash messages are sentences;
// the unconfigured footnote appears only with a starred row.
func TestPagesAreRoleAware(t *testing.T) {
	r := newRig(t)
	r.configure("plain")
	ctx := context.Background()
	m := &drover.Message{Queue: "plain", Task: "t", ID: "dl"}
	if err := r.store.Log().DeadLetter(ctx, m.Queue, drover.DeadLetter{ID: m.ID, Message: m, Failure: drover.Failure{Reason: "boom", FailedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		role            string
		pause, purge, b bool
	}{{"viewer", false, false, false}, {"operator", true, false, true}, {"admin", true, true, true}} {
		q := r.page(c.role, "/queues/plain")
		if has := strings.Contains(q, `id="pause"`); has != c.pause {
			t.Errorf("%s on the queue page: Pause offered %v, want %v", c.role, has, c.pause)
		}
		if has := strings.Contains(q, `class="purge danger"`); has != c.purge {
			t.Errorf("%s on the queue page: Purge offered %v, want %v", c.role, has, c.purge)
		}
		if has := strings.Contains(q, `class="retry"`); has != c.pause {
			t.Errorf("%s on the queue page: Retry offered %v, want %v", c.role, has, c.pause)
		}
		l := r.page(c.role, "/queues?match=pl")
		if has := strings.Contains(l, `id="match-pause"`); has != c.b {
			t.Errorf("%s on the queues page: bulk pause offered %v, want %v", c.role, has, c.b)
		}
		if strings.Contains(l, "enqueued to but not configured") {
			t.Errorf("%s: the unconfigured footnote shows with no starred row", c.role)
		}
	}
	// The rows a view shows can be acted on together.
	if l := r.page("operator", "/queues?view=failing"); !strings.Contains(l, `id="shown-retry"`) || !strings.Contains(l, `name="queues" value="plain"`) {
		t.Error("failing view: want a bulk form for the rows shown (plain)")
	}
	// A pending message nobody runs is not marked running.
	if _, err := r.store.Producer().Enqueue(ctx, &drover.Message{Queue: "plain", Task: "t"}); err != nil {
		t.Fatal(err)
	}
	if q := r.page("viewer", "/queues/plain"); !strings.Contains(q, "waiting") || strings.Contains(q, `class="running"`) {
		t.Error("queue page: a pending message of an unowned queue is marked running")
	}
	if _, err := r.store.Producer().Enqueue(ctx, &drover.Message{Queue: "stray", Task: "t"}); err != nil {
		t.Fatal(err)
	}
	if l := r.page("viewer", "/queues"); !strings.Contains(l, "enqueued to but not configured") {
		t.Error("with an unconfigured queue listed: want the footnote")
	}
	// The reset preview says what changes, in words.
	if rp := r.page("admin", "/queues/plain/reset?to=latest"); !strings.Contains(rp, "After the reset") || !strings.Contains(rp, "1 message(s) waiting now will be skipped and never run.") {
		t.Errorf("reset preview: want before/after rows and what changes, have:\n%.3000s", rp)
	}
	req := httptestRequest("POST", "/api/v1/queues/plain/pause")
	req.SetPathValue("queue", "plain")
	if f := flashOf("queue.pause", req, map[string]any{"name": "plain"}); f != "Paused queue plain." {
		t.Errorf("flash of a pause: want a sentence, have %q", f)
	}
}

func httptestRequest(method, path string) *http.Request {
	req, _ := http.NewRequest(method, "http://console"+path, nil)
	return req
}

// The members page and the overview say which members cannot reach Redis:
// such a member gets no queues and does not lead, and before this only its
// log and /readyz said so.
func TestMembersShowWhichCannotReachRedis(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	for _, m := range []drover.Member{
		{Name: "near-1", Capacity: 1, StartedAt: time.Now()},
		{Name: "cut-1", Capacity: 1, StartedAt: time.Now(), RedisUnreachable: true},
	} {
		if _, err := r.zk.Group().Join(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	row := func(page, member string) string {
		for _, l := range strings.Split(page, "<tr>") {
			if strings.Contains(l, ">"+member+"</a>") {
				return l
			}
		}
		return ""
	}
	for _, path := range []string{"/members", "/"} {
		p := r.page("viewer", path)
		if cut := row(p, "cut-1"); !strings.Contains(cut, ">unreachable</span>") {
			t.Errorf("%s: want cut-1's row to say Redis is unreachable, have %q", path, cut)
		}
		if near := row(p, "near-1"); !strings.Contains(near, "<td>ok</td>") || strings.Contains(near, "unreachable") {
			t.Errorf("%s: want near-1's row to say ok, have %q", path, near)
		}
	}
}
