package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// addQueueNames puts n queue names of MaxQueueNameLen bytes into the
// fleet's set of queues enqueued to (what find lists besides ZooKeeper's
// registry): a long run of 'a' and a distinct tail, the names on which a
// pattern's match tries the most positions.
func addQueueNames(t *testing.T, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	for start := 0; start < n; start += 10_000 {
		names := make([]any, 0, 10_000)
		for i := start; i < min(start+10_000, n); i++ {
			names = append(names, strings.Repeat("a", 191)+fmt.Sprintf("%09d", i))
		}
		if err := rdb.SAdd(ctx, prefix+":queues", names...).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestFindWorstCasePatternAnswersWithinTheBound: the costliest pattern
// the limits allow (MaxMatchBytes, a star, the other wildcards as ?, then
// a long literal that almost matches everywhere) over 100,000 names of
// 200 bytes answers within the request bound (5 s), and the CPU it cost
// is logged. Before issue 41 path.Match re-read the whole pattern at every
// position of every name: about 10 s of CPU for this one request.
func TestFindWorstCasePatternAnswersWithinTheBound(t *testing.T) {
	r := newRig(t)
	const names = 100_000
	addQueueNames(t, r.store.Prefix(), names)
	q := "*" + strings.Repeat("a?", ops.MaxMatchWildcards-1)
	q += strings.Repeat("a", ops.MaxMatchBytes-len(q)-1) + "b"
	if len(q) != ops.MaxMatchBytes {
		t.Fatalf("pattern of %d bytes, want %d", len(q), ops.MaxMatchBytes)
	}
	// List once so that Redis and the pools are warm; on a loaded machine
	// this listing may itself run past the bound (503): only the calls
	// after it are judged.
	r.call("viewer", "GET", "/api/v1/find?match=a", "")
	var (
		status    int
		body      string
		cpu, wall time.Duration
	)
	for attempt := 1; ; attempt++ {
		before, start := cpuTime(t), time.Now()
		status, body = r.call("viewer", "GET", "/api/v1/find?match="+url.QueryEscape(q), "")
		cpu, wall = cpuTime(t)-before, time.Since(start)
		t.Logf("worst-case find over %d names, attempt %d: status %d, %v of CPU, %v of wall time", names, attempt, status, cpu, wall)
		// The listing of 100,000 names from Redis can itself run past the
		// bound on a loaded machine (CI's packages share two cores): that
		// answer never reached the match, so it says nothing of the
		// match's bound. Ask again; a fourth such answer fails below.
		if attempt < 4 && status == http.StatusServiceUnavailable && strings.Contains(body, "did not answer in time") {
			continue
		}
		break
	}
	if status != http.StatusOK && !(status == http.StatusServiceUnavailable && strings.Contains(body, "did not finish")) {
		t.Fatalf("want 200, or 503 saying the match did not finish, have %d: %.300s", status, body)
	}
	if bound := DefaultRequestTimeout; cpu > bound+time.Second {
		t.Fatalf("the find cost %v of CPU, want at most the request bound %v (and a second for the listing)", cpu, bound)
	}
}

// TestFindRefusesAnOverlongPatternWithoutMatching: a 500 KB pattern is
// refused before any name is matched: 414 in a query (past
// MaxQueryBytes), 400 naming the limit in a bulk action's body, and a
// pattern one byte past MaxMatchBytes is 400 in find.
func TestFindRefusesAnOverlongPatternWithoutMatching(t *testing.T) {
	r := newRigOn(t, testenv.ZooKeeper(t).Addrs, queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}}, Config{MaxBody: DefaultMaxBody})
	r.queueWith("a", 0)
	huge := strings.Repeat("a*", 250_000)
	before := r.srv.fleetOps().Find().NamesMatched()
	r.want(http.StatusRequestURITooLong, "viewer", "GET", "/api/v1/find?match="+huge, "")
	if body := r.want(http.StatusBadRequest, "operator", "POST", "/api/v1/bulk/pause", `{"match":"`+huge+`"}`); !strings.Contains(body, "at most 256") {
		t.Errorf("bulk pause of a 500 KB match: want the limit named, have %.300s", body)
	}
	long := strings.Repeat("a", ops.MaxMatchBytes) + "*"
	if body := r.want(http.StatusBadRequest, "viewer", "GET", "/api/v1/find?match="+url.QueryEscape(long), ""); !strings.Contains(body, "at most 256") {
		t.Errorf("find of %d bytes: want the limit named, have %.300s", len(long), body)
	}
	if body := r.want(http.StatusBadRequest, "viewer", "GET", "/api/v1/find?match="+url.QueryEscape(strings.Repeat("*a", 9)), ""); !strings.Contains(body, "wildcards") {
		t.Errorf("find with 9 wildcards: want the limit named, have %.300s", body)
	}
	if n := r.srv.fleetOps().Find().NamesMatched() - before; n != 0 {
		t.Errorf("want no name matched, have %d", n)
	}
}

// TestOpenConsoleRefusesCrossSiteCostlyReads: on a console without
// tokens, a find, the queues page with a match and the running view asked
// for by another site (a foreign page's <img>: Sec-Fetch-Site cross-site,
// or same-site from another origin) are refused 403 before any matching;
// the same find typed by the user (none), from the console itself
// (same-origin) or by an API client (no header) is answered.
func TestOpenConsoleRefusesCrossSiteCostlyReads(t *testing.T) {
	_, srv, _ := openRig(t)
	h := srv.Handler()
	get := func(target, site string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", target, nil)
		req.RemoteAddr = "127.0.0.1:5000"
		req.Host = "127.0.0.1:8080"
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	before := srv.fleetOps().Find().NamesMatched()
	for _, target := range []string{"/api/v1/find?match=q*", "/queues?match=q*", "/api/v1/running", "/running"} {
		for _, site := range []string{"cross-site", "same-site"} {
			if rec := get(target, site); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "another site") {
				t.Errorf("GET %s with Sec-Fetch-Site %s: want 403 naming another site, have %d: %.300s", target, site, rec.Code, rec.Body)
			}
		}
	}
	if n := srv.fleetOps().Find().NamesMatched() - before; n != 0 {
		t.Fatalf("refused finds matched %d names, want none", n)
	}
	for _, site := range []string{"", "none", "same-origin"} {
		if rec := get("/api/v1/find?match=q*", site); rec.Code != http.StatusOK {
			t.Errorf("find with Sec-Fetch-Site %q: want 200, have %d: %.300s", site, rec.Code, rec.Body)
		}
	}
	if srv.fleetOps().Find().NamesMatched() == before {
		t.Error("the finds answered matched no name: the counter cannot show a refusal")
	}
	if rec := get("/queues", "cross-site"); rec.Code != http.StatusOK { // no match: the cached snapshot, cheap
		t.Errorf("queues page without a match, cross-site: want 200, have %d", rec.Code)
	}
}

// TestEveryRouteBoundsHeadersAndQuery: a header past MaxHeaderBytes is
// answered 431 and a query past MaxQueryBytes 414, on a route that needs
// no credentials as on one that does, before the Host check.
func TestEveryRouteBoundsHeadersAndQuery(t *testing.T) {
	r := newRig(t)
	for _, path := range []string{"/api/v1/overview", "/login", "/api/v1/queues/q/jobs/x"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("X-Padding", strings.Repeat("x", MaxHeaderBytes))
		rec := httptest.NewRecorder()
		r.srv.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("GET %s with a header of %d bytes: want 431, have %d", path, MaxHeaderBytes, rec.Code)
		}
		req = httptest.NewRequest("GET", path+"?q="+strings.Repeat("x", MaxQueryBytes), nil)
		rec = httptest.NewRecorder()
		r.srv.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestURITooLong {
			t.Errorf("GET %s with a query of %d bytes: want 414, have %d", path, MaxQueryBytes+2, rec.Code)
		}
	}
	req := httptest.NewRequest("GET", "/api/v1/overview", nil)
	req.Header.Set("Authorization", "Bearer "+r.tokens["viewer"])
	req.Header.Set("X-Padding", strings.Repeat("x", MaxHeaderBytes-len("X-Padding")))
	rec := httptest.NewRecorder()
	r.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("a header of exactly %d bytes: want 200, have %d: %.300s", MaxHeaderBytes, rec.Code, rec.Body)
	}
}
