package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover-dev/drover/internal/auth"
)

// TestConsoleForManyQueuesInABrowser drives the console's many-queue
// features in headless Chromium against a real fleet (issue 34): find
// queues by prefix and pause them all in one action (audited once with its
// count; the pause flags agree), resume hand-picked rows, see a task
// running now with its pid on the running view and as running on its
// queue's page, and the overview's charts with axes and units.
// DROVER_SCREENSHOTS=$PWD/docs/web regenerates docs/web.md's pictures.
func TestConsoleForManyQueuesInABrowser(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	for i := range 12 {
		f.createQueue(fmt.Sprintf("tenant-%02d", i), false, []string{"/bin/true"}, nil)
	}
	f.createQueue("other", false, []string{"/bin/true"}, nil)
	long := "long-" + strings.Repeat("x", 180) // an audit target that does not break
	f.createQueue(long, false, []string{"/bin/true"}, nil)
	f.createQueue("slow", false, []string{"/bin/sleep", "120"}, nil)
	f.startWorker("w1")
	con := f.startConsole(t)
	b := browser(t)
	login(t, b, con, auth.Operator)
	shots := os.Getenv("DROVER_SCREENSHOTS")
	ctx := context.Background()

	// Find by prefix: the 12 tenant- queues, not "other".
	list := con.url + "/queues?match=tenant-&refresh=0"
	if n := text(t, b, list, "#matching"); n != "12 matching" {
		t.Fatalf("find tenant-: want 12 matching, have %q", n)
	}
	// Pause them all in one action.
	var flash string
	run(t, b, "bulk pause by prefix", chromedp.Navigate(list), chromedp.SendKeys(`#bulk-match input[name="reason"]`, "migration", chromedp.ByQuery),
		chromedp.Click("#match-pause", chromedp.ByQuery), chromedp.WaitVisible("#flash", chromedp.ByQuery), chromedp.Text("#flash", &flash, chromedp.ByQuery))
	if !strings.Contains(flash, "Paused 12 of 12 queue(s)") || !strings.Contains(flash, `"tenant-"`) {
		t.Fatalf("flash after the bulk pause: want a sentence with the count, have %q", flash)
	}
	ps, err := f.zk.Pauses().Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Queues) != 12 || ps.Queues["tenant-03"].Reason != "migration" {
		t.Fatalf("pause flags after the bulk pause: want 12 with the reason, have %d", len(ps.Queues))
	}
	if _, ok := ps.Queues["other"]; ok {
		t.Fatal("the bulk pause of tenant- paused other")
	}
	// `drover ctl status` agrees.
	out, err := f.ctl(nil, "status", "-o", "json")
	if err != nil {
		t.Fatalf("ctl status: %v\n%s", err, out)
	}
	var status struct {
		Queues []struct {
			Queue  string `json:"queue"`
			Paused bool   `json:"paused"`
		} `json:"queues"`
	}
	if err := json.Unmarshal([]byte(out), &status); err != nil {
		t.Fatalf("ctl status -o json: %v\n%s", err, out)
	}
	pausedByCtl := 0
	for _, q := range status.Queues {
		if q.Queue == long {
			continue
		}
		if q.Paused != strings.HasPrefix(q.Queue, "tenant-") {
			t.Errorf("ctl status: %s paused=%v after the bulk pause of tenant-", q.Queue, q.Paused)
		}
		if q.Paused {
			pausedByCtl++
		}
	}
	if pausedByCtl != 12 {
		t.Fatalf("ctl status: want 12 paused queues, have %d", pausedByCtl)
	}
	// Resume two hand-picked rows.
	run(t, b, "bulk resume of selected rows", chromedp.Navigate(list),
		chromedp.Click(`tr[data-queue="tenant-00"] input[type=checkbox]`, chromedp.ByQuery),
		chromedp.Click(`tr[data-queue="tenant-01"] input[type=checkbox]`, chromedp.ByQuery),
		chromedp.Click("#selected-resume", chromedp.ByQuery), chromedp.WaitVisible("#flash", chromedp.ByQuery), chromedp.Text("#flash", &flash, chromedp.ByQuery))
	if !strings.Contains(flash, "Resumed 2 of 2") {
		t.Fatalf("flash after resuming two rows: want \"Resumed 2 of 2\", have %q", flash)
	}
	if ps, err = f.zk.Pauses().Read(ctx); err != nil || len(ps.Queues) != 10 {
		t.Fatalf("after resuming 2: want 10 paused, have %d (%v)", len(ps.Queues), err)
	}
	audit := text(t, b, con.url+"/audit", "#audit")
	if strings.Count(audit, "bulk.pause") != 1 || !strings.Contains(audit, "selected 12 queue(s)") || strings.Contains(audit, "queue.pause") {
		t.Fatalf("audit: want one bulk.pause record with its count and no per-queue record, have:\n%s", audit)
	}

	// The audit table fits the window even with a long unbroken target.
	run(t, b, "pause the long-named queue", chromedp.Navigate(con.url+"/queues/"+long+"?refresh=0"),
		chromedp.Click("#pause", chromedp.ByQuery), chromedp.WaitVisible("#paused", chromedp.ByQuery))
	var overflow bool
	run(t, b, "measure the audit page", chromedp.Navigate(con.url+"/audit"), chromedp.WaitVisible("#audit", chromedp.ByQuery),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &overflow))
	if overflow {
		t.Fatal("the audit page is wider than the window with a long target")
	}

	// A task running now: on the running view with its pid, and marked
	// running on its queue's page.
	ids := f.enqueue([]string{"slow"}, 1)["slow"]
	until(t, b, con.url+"/running?refresh=0", "#running", "the slow task on the running view", func(s string) bool {
		return strings.Contains(s, ids[0]) && strings.Contains(s, "w1")
	})
	pid := text(t, b, con.url+"/running?refresh=0", `tr[data-id="`+ids[0]+`"] .pid`)
	if pid == "" || pid == "—" {
		t.Fatalf("running view: want the task's pid, have %q", pid)
	}
	if row := text(t, b, con.url+"/queues/slow?refresh=0", `#pending tr[data-id="`+ids[0]+`"]`); !strings.Contains(row, "running") || !strings.Contains(row, "pid "+pid) {
		t.Fatalf("queue page: want the pending row marked running with pid %s, have %q", pid, row)
	}

	// The overview's charts: axes with units once two samples are in.
	until(t, b, con.url+"/?refresh=0", "#chart-lag", "the lag chart to have axes", func(s string) bool { return strings.Contains(s, "time (UTC)") })
	var labels, units string
	run(t, b, "read the charts", chromedp.Navigate(con.url+"/?refresh=0"),
		chromedp.Evaluate(`document.querySelectorAll("#charts svg.chart text.ylabel").length + ""`, &labels),
		chromedp.Text("#chart-lag", &units, chromedp.ByQuery))
	if labels == "0" || !strings.Contains(units, "messages") {
		t.Fatalf("overview charts: want y-axis labels and the unit, have %s labels, %q", labels, units)
	}
	until(t, b, con.url+"/?refresh=0", "#chart-tput", "the tasks/s chart to have axes", func(s string) bool { return strings.Contains(s, "tasks/s") })
	if shots != "" {
		screenshots(t, b, con.url, shots, "bulk", "running", "overview")
	}

	// A viewer is offered no bulk action.
	run(t, b, "log out", chromedp.Navigate(con.url+"/"), chromedp.Click(".who button", chromedp.ByQuery), chromedp.WaitVisible("#token", chromedp.ByQuery))
	login(t, b, con, auth.Viewer)
	var offered int
	run(t, b, "the queues page as a viewer", chromedp.Navigate(list), chromedp.WaitVisible("#matching", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#match-pause, #selected-pause, input[type=checkbox]").length`, &offered))
	if offered != 0 {
		t.Fatalf("a viewer's queues page: want no bulk actions, have %d controls", offered)
	}
}
