package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// TestForeignImagesCostTheOpenConsoleNothing: a page of another site
// (evil.example, served on loopback) whose <img> tags point at the costly
// reads of a console without tokens (a find with the longest, most
// wildcarded pattern the limits allow, the queues page with that match,
// the running view) makes real headless Chromium send them as its user's
// browser would: every one is refused 403 before any work, each refusal
// is in the refusal stream saying so, and the same find opened by the
// user (typed: Sec-Fetch-Site none) is answered. The assertions are on
// the refusals recorded, not on timing.
func TestForeignImagesCostTheOpenConsoleNothing(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	f.createQueue("img", false, []string{"/bin/true"}, nil)
	webPort := freePort(t)
	f.startDrover("web", "console", fmt.Sprintf("DROVER_WEB_ADDR=127.0.0.1:%d", webPort))
	console := fmt.Sprintf("http://127.0.0.1:%d", webPort)
	waitFor(t, 60*time.Second, "the console to answer /readyz", func() bool {
		resp, err := http.Get(console + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	// 256 bytes, 8 wildcards: the costliest pattern the limits allow.
	pattern := "*" + strings.Repeat("a?", 7)
	pattern += strings.Repeat("a", 256-len(pattern)-1) + "b"
	m := url.QueryEscape(pattern)
	targets := []string{
		"/api/v1/find?match=" + m + "&n=1", "/api/v1/find?match=" + m + "&n=2",
		"/api/v1/find?match=" + m + "&n=3", "/api/v1/find?match=" + m + "&n=4",
		"/queues?match=" + m, "/running", "/api/v1/running",
	}
	var imgs strings.Builder
	for _, p := range targets {
		fmt.Fprintf(&imgs, "<img src=\"%s%s\">\n", console, p)
	}
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!doctype html><title>cats</title>\n%s", imgs.String())
	}))
	t.Cleanup(foreign.Close)
	foreignURL := strings.Replace(foreign.URL, "127.0.0.1", "evil.example", 1)

	before := refusalsOf(t, console)
	ctx := rebindingBrowser(t) // evil.example resolves to 127.0.0.1
	var settled int
	run(t, ctx, "load the foreign page and wait for its images", chromedp.Navigate(foreignURL+"/"),
		chromedp.Evaluate(`Promise.all([...document.images].map(i => i.complete ? 1 : new Promise(r => { i.onload = i.onerror = () => r(1) }))).then(a => a.length)`,
			&settled, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if settled != len(targets) {
		t.Fatalf("the foreign page settled %d images, want %d", settled, len(targets))
	}

	// Every image request is in the refusal stream as a cross-site refusal
	// (the sampler records the first 10 of a source a minute one by one).
	refused := map[string]int{}
	for _, rec := range refusalsOf(t, console)[len(before):] {
		if rec.Status == http.StatusForbidden && strings.Contains(rec.Result, "Sec-Fetch-Site: cross-site") {
			refused[rec.Target]++
		}
	}
	want := map[string]int{"/find": 4, "/queues": 1, "/running": 2}
	for target, n := range want {
		if refused[target] != n {
			t.Errorf("cross-site refusals of %s: want %d, have %d (all: %v)", target, n, refused[target], refused)
		}
	}

	// The user's own request for the same find is answered.
	var body string
	run(t, ctx, "open the find as the user", chromedp.Navigate(console+targets[0]), chromedp.Text("body", &body, chromedp.ByQuery))
	if strings.Contains(body, "refused") || !strings.Contains(body, `"queues"`) {
		t.Errorf("the find typed by the user: want it answered, have %.300s", body)
	}
}

// refusalRecord is one record of the refusal stream, as the API gives it.
type refusalRecord struct {
	Target string `json:"target"`
	Status int    `json:"status"`
	Result string `json:"result"`
}

// refusalsOf returns the console's refusal stream, oldest first (read by
// an API client on loopback: no Sec-Fetch-Site, so not itself refused).
func refusalsOf(t *testing.T, console string) []refusalRecord {
	t.Helper()
	resp, err := http.Get(console + "/api/v1/audit/refusals?limit=500")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("refusal stream: want 200, have %d %s", resp.StatusCode, b)
	}
	var recs []refusalRecord
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatalf("refusal stream %s: %v", b, err)
	}
	for i, j := 0, len(recs)-1; i < j; i, j = i+1, j-1 {
		recs[i], recs[j] = recs[j], recs[i]
	}
	return recs
}
