package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// redisBytes sums MEMORY USAGE over every key of prefix, and returns the
// largest value of an audit list (LRANGE of both lists) in bytes.
func redisBytes(t *testing.T, prefix string) (total, largestRecord int64) {
	t.Helper()
	ctx := context.Background()
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	keys, err := rdb.Keys(ctx, prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		n, err := rdb.Do(ctx, "MEMORY", "USAGE", k, "SAMPLES", "0").Int64()
		if err != nil {
			t.Fatalf("MEMORY USAGE %s: %v", k, err)
		}
		total += n
	}
	for _, k := range []string{prefix + ":audit", prefix + ":audit:refusals"} {
		vals, err := rdb.LRange(ctx, k, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			largestRecord = max(largestRecord, int64(len(v)))
		}
	}
	return total, largestRecord
}

// TestRefusalFloodCannotEvictAMutationNorFillRedis sends 100,000
// anonymous refused mutations (401, a client address per request, as a
// loop of new connections has) through the console's handler, in
// process: every mutation recorded before is still in the audit log, and
// Redis grows by a bounded number of bytes (the samples of the source and
// one count per minute), said in the log. On the code before issue 41
// every refusal was an audit record: the 10,000 newest evicted the rest.
func TestRefusalFloodCannotEvictAMutationNorFillRedis(t *testing.T) {
	r := newRig(t)
	r.queueWith("a", 0)
	for i := 0; i < 5; i++ {
		r.want(http.StatusOK, "operator", "POST", "/api/v1/queues/a/pause", fmt.Sprintf(`{"reason":"before the flood %d"}`, i))
	}
	before, _ := redisBytes(t, r.store.Prefix())
	h := r.srv.Handler()
	const flood = 100_000
	for i := 0; i < flood; i++ {
		req := httptest.NewRequest("POST", "/api/v1/queues/a/pause", strings.NewReader(`{"reason":"x"}`))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = fmt.Sprintf("192.0.2.7:%d", 1024+i%60000)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("anonymous pause %d: want 401, have %d: %s", i, rec.Code, rec.Body)
		}
	}
	have := refusalsFrom(t, r.srv, "anonymous@192.0.2.7") // ends the minute: its count is written
	after, _ := redisBytes(t, r.store.Prefix())
	recs, err := r.srv.fleetOps().Audit().Records(context.Background(), 0, 500)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, rec := range recs {
		if rec.Action == "queue.pause" && strings.Contains(rec.Detail, "before the flood") {
			kept++
		}
	}
	if kept != 5 {
		t.Errorf("after %d refusals: want the 5 earlier pauses in the audit log, have %d of %d records", flood, kept, len(recs))
	}
	if have != flood {
		t.Errorf("refusal stream: want the %d refusals recorded or counted, have %d", flood, have)
	}
	added := after - before
	t.Logf("%d anonymous refusals added %d bytes to Redis (MEMORY USAGE of the test's keys: %d before, %d after)", flood, added, before, after)
	if added > 32<<10 {
		t.Errorf("%d refusals added %d bytes to Redis: want at most 32 KB", flood, added)
	}
}

// TestRefusalFloodOnAnOpenConsole: the same on a console without tokens,
// refused for a foreign Host (the DNS-rebinding case): 100,000 refusals
// leave the earlier mutation and add a bounded number of bytes.
func TestRefusalFloodOnAnOpenConsole(t *testing.T) {
	r, srv, base := openRig(t)
	pause, _ := http.NewRequest("POST", base+"/api/v1/queues/q/pause", strings.NewReader(`{"reason":"before the flood"}`))
	pause.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(pause)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("local pause: want 200, have %d", resp.StatusCode)
	}
	before, _ := redisBytes(t, r.store.Prefix())
	h := srv.Handler()
	const flood = 100_000
	for i := 0; i < flood; i++ {
		req := httptest.NewRequest("POST", "/api/v1/queues/q/resume", nil)
		req.Host, req.RemoteAddr = "evil.example", fmt.Sprintf("127.0.0.1:%d", 1024+i%60000)
		req.Header.Set("Origin", "http://evil.example")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Fatalf("foreign Host %d: want 403, have %d", i, rec.Code)
		}
	}
	have := refusalsFrom(t, srv, "anonymous@127.0.0.1")
	after, _ := redisBytes(t, r.store.Prefix())
	if !audited(t, srv.fleetOps(), "/queues/q/pause", http.StatusOK) {
		t.Errorf("after %d refusals: the earlier pause is gone from the audit log", flood)
	}
	if have != flood {
		t.Errorf("refusal stream: want the %d refusals recorded or counted, have %d", flood, have)
	}
	t.Logf("%d refusals of a foreign Host added %d bytes to Redis", flood, after-before)
	if after-before > 32<<10 {
		t.Errorf("%d refusals added %d bytes to Redis: want at most 32 KB", flood, after-before)
	}
}

// TestAHugeHeaderStoresAFewKB: a refused request with a 1 MB Host, Origin
// and User-Agent (each with newlines and a right-to-left override) is
// recorded in at most 4 KB, escaped: it wrote 1 MB per header before.
func TestAHugeHeaderStoresAFewKB(t *testing.T) {
	tokens := newRig(t)
	open, openSrv, _ := openRig(t)
	for _, c := range []struct {
		name string
		r    *rig
		srv  *Server
	}{{"with tokens", tokens, tokens.srv}, {"open", open, openSrv}} {
		before, _ := redisBytes(t, c.r.store.Prefix())
		huge := strings.Repeat("a", 1<<20) + "\n\u202eevil"
		req := httptest.NewRequest("POST", "/api/v1/queues/a/pause", nil)
		req.Host = huge
		req.Header.Set("Origin", "http://"+huge)
		req.Header.Set("User-Agent", huge)
		rec := httptest.NewRecorder()
		c.srv.Handler().ServeHTTP(rec, req)
		if rec.Code < 400 {
			t.Fatalf("%s: want a refusal, have %d", c.name, rec.Code)
		}
		after, largest := redisBytes(t, c.r.store.Prefix())
		t.Logf("%s: a refusal with three 1 MB headers: largest record %d bytes, %d bytes added to Redis", c.name, largest, after-before)
		if largest == 0 || largest > 4<<10 {
			t.Fatalf("%s: want the refusal recorded in at most 4 KB, have a record of %d bytes", c.name, largest)
		}
		recs, err := c.srv.fleetOps().Audit().Refusals(context.Background(), 0, 10)
		if err != nil || len(recs) != 1 {
			t.Fatalf("%s: want one refusal record, have %d, %v", c.name, len(recs), err)
		}
		for _, f := range []string{recs[0].Detail, recs[0].Result, recs[0].Target} {
			if strings.ContainsAny(f, "\n\u202e") {
				t.Errorf("%s: a control character reached the record unescaped: %q", c.name, f)
			}
		}
	}
}

// TestAnUnboundedReasonIsRefusedAndNothingWritten: a 900 KB pause reason
// (under the console's 1 MiB body limit) is answered 400 naming the field
// and the limit by every pause route, JSON and form, and no pause node is
// written; so are reasons with a right-to-left override or a newline. On
// the code before issue 41 the queue's pause node held the 900 KB.
func TestAnUnboundedReasonIsRefusedAndNothingWritten(t *testing.T) {
	r := newRigOn(t, testenv.ZooKeeper(t).Addrs, queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}}, Config{MaxBody: 1 << 20})
	r.queueWith("a", 0)
	r.queueWith("b", 0)
	big := strings.Repeat("x", 900<<10)
	for _, path := range []string{"/api/v1/queues/a/pause", "/api/v1/members/w1/pause", "/api/v1/pause", "/api/v1/bulk/pause"} {
		body, _ := json.Marshal(map[string]any{"reason": big, "queues": "a,b"})
		if st, b := r.call("operator", "POST", path, string(body)); st != http.StatusBadRequest || !strings.Contains(b, "reason: 921600 bytes, at most 1024 bytes (1 KB)") {
			t.Errorf("POST %s with a 900 KB reason: want 400 naming reason and 1 KB, have %d: %.300s", path, st, b)
		}
		for _, bad := range []string{"xss-\u202egnp.exe", "two\nlines"} {
			body, _ := json.Marshal(map[string]any{"reason": bad, "queues": "a,b"})
			if st, b := r.call("operator", "POST", path, string(body)); st != http.StatusBadRequest || !strings.Contains(b, "reason") {
				t.Errorf("POST %s with reason %q: want 400 naming reason, have %d: %.300s", path, bad, st, b)
			}
		}
	}
	// The console's form, as a browser posts it (a session, its CSRF token).
	form := url.Values{"reason": {big}, "return": {"/queues/a"}}
	req, _ := http.NewRequest("POST", r.http.URL+"/api/v1/queues/a/pause", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+r.tokens["operator"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("the pause form with a 900 KB reason: want 400, have %d", resp.StatusCode)
	}
	ps, err := r.zk.Pauses().Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ps.All != nil || len(ps.Queues) != 0 || len(ps.Members) != 0 {
		t.Fatalf("refused pauses: want no pause node, have %d queue(s), %d member(s), all=%v", len(ps.Queues), len(ps.Members), ps.All != nil)
	}
	// The audit record of the refused pause is bounded too.
	_, largest := redisBytes(t, r.store.Prefix())
	if largest > 8<<10 {
		t.Errorf("the audit record of a refused 900 KB reason: want at most 8 KB, have %d bytes", largest)
	}
	r.want(http.StatusOK, "operator", "POST", "/api/v1/queues/a/pause", `{"reason":"`+strings.Repeat("é", drover.MaxReasonBytes/2)+`"}`)
}

// TestALabelIsBounded: a queue's tags (its labels) written through the API
// are refused with 400 naming the field when one is past 128 bytes or
// holds a bidirectional control, and the configuration is not written.
func TestALabelIsBounded(t *testing.T) {
	r := newRig(t)
	for _, tag := range []string{strings.Repeat("t", 129), "gpu\u202e", "two words"} {
		body, _ := json.Marshal(map[string]any{"tags": []string{tag}, "tasks": map[string]any{"*": map[string]any{"command": []string{"/bin/true"}}}})
		if st, b := r.call("admin", "PUT", "/api/v1/queues/tagged/config", string(body)); st != http.StatusBadRequest || !strings.Contains(b, "tags") {
			t.Errorf("tag %.20q: want 400 naming tags, have %d: %.300s", tag, st, b)
		}
	}
	if st, b := r.call("viewer", "GET", "/api/v1/queues/tagged", ""); st != http.StatusNotFound {
		t.Errorf("refused configurations: want the queue absent (404), have %d: %.200s", st, b)
	}
}
