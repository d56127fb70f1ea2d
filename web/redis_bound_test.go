package web

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// TestFrozenRedisIsOneDeadlinePerRequest freezes Redis (SIGSTOP) and asks
// every kind of route that reads or writes it: each answers 503 naming
// Redis within the request's one bound (Config.RequestTimeout), the
// explaining ping and a mutation's audit record included, not the bound
// and then a ping and then an audit write each with its own timeout. The
// Redis client keeps its default 3 s read timeout, longer than the bound,
// as drover web's does.
//
// The elapsed time is an upper bound checked with slack for a loaded
// machine (the bound plus half of it), not a synchronisation: before this
// a GET took the bound plus a 1 s ping, an enqueue the bound plus the ping
// plus a 2 s audit write.
func TestFrozenRedisIsOneDeadlinePerRequest(t *testing.T) {
	const bound = time.Second
	redis := testenv.NewRedis(t, testenv.RedisOptions{})
	r := newRigOn(t, testenv.ZooKeeper(t).Addrs, queue.ClientOptions{Addrs: []string{redis.Addr}}, Config{RequestTimeout: bound})
	r.srv.cfg.RedisPing = r.store.Ping
	r.queueWith("fz", 1)
	r.withJobs(0)
	if a := r.enqueue("fz", `{"task":"warm","id":"warm"}`); a.status != http.StatusCreated {
		t.Fatalf("warm-up enqueue: want 201, have %d %s", a.status, a.body)
	}
	viewer := r.login("viewer") // a browser session: its check reads Redis
	redis.Pause(t)
	defer redis.Resume(t)
	start := time.Now()
	req, _ := http.NewRequest("GET", r.http.URL+"/api/v1/whoami", nil)
	resp, err := viewer.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	t.Logf("GET /api/v1/whoami with a session: %d in %v", resp.StatusCode, took.Round(time.Millisecond))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "Redis") {
		t.Errorf("a session request: want 503 naming Redis (not 401), have %d %.300s", resp.StatusCode, b)
	}
	if took > bound+bound/2 {
		t.Errorf("a session request: answered after %v, want within the request bound %v", took.Round(time.Millisecond), bound)
	}
	for _, c := range []struct{ role, method, path, body string }{
		{"producer", "POST", "/api/v1/queues/fz/jobs", `{"task":"t"}`},
		{"producer", "DELETE", "/api/v1/queues/fz/jobs/warm", ""},
		{"viewer", "GET", "/api/v1/queues/fz/jobs/warm", ""},
		{"viewer", "GET", "/api/v1/audit", ""},
		{"viewer", "GET", "/audit", ""},
		{"viewer", "GET", "/api/v1/queues", ""},
		{"viewer", "GET", "/api/v1/queues/fz/pending", ""},
		{"operator", "POST", "/api/v1/queues/fz/dead/purge", ""},
	} {
		start := time.Now()
		st, b := r.call(c.role, c.method, c.path, c.body)
		took := time.Since(start)
		t.Logf("%s %s: %d in %v", c.method, c.path, st, took.Round(time.Millisecond))
		if c.path == "/api/v1/queues/fz/dead/purge" { // an operator may not: refused before Redis, at once
			if st != http.StatusForbidden {
				t.Errorf("%s %s as operator: want 403, have %d %.200s", c.method, c.path, st, b)
			}
		} else if st != http.StatusServiceUnavailable || !strings.Contains(b, "Redis") {
			t.Errorf("%s %s: want 503 naming Redis, have %d %.300s", c.method, c.path, st, b)
		}
		if took > bound+bound/2 {
			t.Errorf("%s %s: answered after %v, want within the request bound %v (and scheduling slack)", c.method, c.path, took.Round(time.Millisecond), bound)
		}
	}
}
