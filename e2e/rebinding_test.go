package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// rebindingBrowser is a headless Chromium in which evil.example resolves to
// 127.0.0.1: a page of evil.example served on a loopback port is what a
// DNS-rebinding attack leaves in a victim's browser once the attacker's
// name points at 127.0.0.1.
func rebindingBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("host-resolver-rules", "MAP evil.example 127.0.0.1"),
		chromedp.UserDataDir(chromiumProfile(t)),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// fetchResult is what a page's fetch() saw.
type fetchResult struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
	Error  string `json:"error"`
}

// fetchFrom opens origin in the browser and runs fetch(path, init) in that
// page, as a script of that origin would.
func fetchFrom(t *testing.T, ctx context.Context, origin, path, init string) fetchResult {
	t.Helper()
	js := fmt.Sprintf(`fetch(%q, %s).then(async r => ({status: r.status, body: (await r.text()).slice(0, 300)}), e => ({status: 0, error: String(e)}))`, path, init)
	var raw json.RawMessage
	run(t, ctx, "fetch "+path+" from "+origin, chromedp.Navigate(origin+"/"),
		chromedp.Evaluate(js, &raw, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	var r fetchResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("fetch result %s: %v", raw, err)
	}
	return r
}

// TestRebindingPageCannotUseTheOpenConsoleOrTheWorkersDebug: a page of
// evil.example (resolved to 127.0.0.1, as after DNS rebinding) on the port
// of a console without tokens can neither read it (whoami) nor mutate it
// (pause a queue), and on a worker's admin port cannot read /debug/state
// or /debug/pprof; the same fetches from the console's own origin work,
// so the refusals are the Host check's.
func TestRebindingPageCannotUseTheOpenConsoleOrTheWorkersDebug(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	f.createQueue("rb", false, []string{"/bin/true"}, nil)
	webPort, adminPort := freePort(t), freePort(t)
	f.startDrover("web", "console", fmt.Sprintf("DROVER_WEB_ADDR=127.0.0.1:%d", webPort))
	f.startWorker("rb-worker", fmt.Sprintf("DROVER_WORKER_ADMIN_ADDR=127.0.0.1:%d", adminPort))
	for _, u := range []string{fmt.Sprintf("http://127.0.0.1:%d/readyz", webPort), fmt.Sprintf("http://127.0.0.1:%d/readyz", adminPort)} {
		waitFor(t, 60*time.Second, u+" to answer 200", func() bool {
			resp, err := http.Get(u)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 200
		})
	}
	ctx := rebindingBrowser(t)
	own := fmt.Sprintf("http://127.0.0.1:%d", webPort)
	evil := fmt.Sprintf("http://evil.example:%d", webPort)
	post := `{method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"}`

	if r := fetchFrom(t, ctx, own, "/api/v1/whoami", "{}"); r.Status != 200 || !strings.Contains(r.Body, "admin") {
		t.Fatalf("whoami from the console's own origin: want 200 admin, have %+v", r)
	}
	if r := fetchFrom(t, ctx, evil, "/api/v1/whoami", "{}"); r.Status != 403 || strings.Contains(r.Body, `"role"`) {
		t.Errorf("whoami from %s: want 403, have %+v", evil, r)
	}
	if r := fetchFrom(t, ctx, evil, "/api/v1/queues/rb/pause", post); r.Status != 403 {
		t.Errorf("pause from %s: want 403, have %+v", evil, r)
	}
	if r := fetchFrom(t, ctx, own, "/api/v1/queues/rb", "{}"); r.Status != 200 || strings.Contains(r.Body, `"paused": true`) {
		t.Errorf("queue rb after the refused pause: want 200 and not paused, have %+v", r)
	}

	ownAdmin := fmt.Sprintf("http://127.0.0.1:%d", adminPort)
	evilAdmin := fmt.Sprintf("http://evil.example:%d", adminPort)
	if r := fetchFrom(t, ctx, ownAdmin, "/debug/state", "{}"); r.Status != 200 {
		t.Fatalf("/debug/state from the worker's own origin: want 200, have %+v", r)
	}
	for _, path := range []string{"/debug/state", "/debug/pprof/", "/debug/pprof/cmdline"} {
		if r := fetchFrom(t, ctx, evilAdmin, path, "{}"); r.Status != 403 {
			t.Errorf("%s from %s: want 403, have %+v", path, evilAdmin, r)
		}
	}
}
