package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover/queue"
)

func TestSchedules(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "s")
	c.ok("ctl", "schedule", "add", "hb", "--queue", "s", "--task", "beat", "--every", "30s", "--args", `{"x":1}`)
	c.ok("ctl", "schedule", "add", "nightly", "--queue", "s", "--task", "build", "--cron", "5 4 * * mon-fri", "--tz", "Europe/Berlin", "--catchup", "skip")
	c.ok("ctl", "schedule", "add", "once", "--queue", "s", "--task", "launch", "--at", "2099-01-02T09:00:00Z", "--disabled")
	file := filepath.Join(t.TempDir(), "def.json")
	os.WriteFile(file, []byte(`{"queue":"s","task":"f","schedule":{"type":"interval","every":"1h"}}`), 0o644)
	c.ok("ctl", "schedule", "add", "fromfile", "-f", file)

	var list []scheduleJSON
	r := c.okJSON(&list, "ctl", "schedule", "ls")
	// Nobody runs a scheduler here: ls says so, rather than leave a NEXT
	// in the past (or "planning") unexplained.
	if !strings.Contains(r.stderr, "no scheduler is leading") {
		t.Fatalf("want a note that no scheduler leads, have:\n%s", r)
	}
	if len(list) != 4 || list[0].Name != "fromfile" || list[1].Name != "hb" || list[3].Name != "once" || list[3].State != "disabled" {
		t.Fatalf("want fromfile, hb, nightly, once (disabled); have %+v", list)
	}
	c.fails(exitRefused, []string{"already exists", "--replace"}, "ctl", "schedule", "add", "hb", "--queue", "s", "--task", "beat", "--every", "1m")
	c.ok("ctl", "schedule", "add", "hb", "--queue", "s", "--task", "beat2", "--every", "1m", "--replace")

	var hb scheduleJSON
	c.okJSON(&hb, "ctl", "schedule", "show", "hb")
	var compact bytes.Buffer
	json.Compact(&compact, hb.Definition)
	if def := compact.String(); !contains(def, `"task":"beat2"`, `"every":"1m0s"`) {
		t.Fatalf("want the replaced definition, have %s", def)
	}
	c.ok("ctl", "schedule", "disable", "hb")
	c.okJSON(&hb, "ctl", "schedule", "show", "hb")
	if hb.State != "disabled" {
		t.Fatalf("want hb disabled, have %s", hb.State)
	}
	c.ok("ctl", "schedule", "enable", "hb")
	c.okJSON(&hb, "ctl", "schedule", "show", "hb")
	if hb.State == "disabled" {
		t.Fatalf("want hb enabled again, have %s", hb.State)
	}
	c.ok("ctl", "schedule", "rm", "hb")
	c.fails(exitNotFound, []string{"not found"}, "ctl", "schedule", "rm", "hb")
	c.fails(exitNotFound, []string{"not found"}, "ctl", "schedule", "show", "hb")
	c.fails(exitNotFound, []string{"not found"}, "ctl", "schedule", "enable", "hb")

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--every", "soon"}, `"soon" for "--every" flag`},
		// Zero is given, not missing: it used to say "schedule.every: required".
		{[]string{"--every", "0s"}, `"0s" for "--every" flag: want a duration ≥ 1s`},
		{[]string{"--every", "1m", "--jitter", "-5s"}, `"-5s" for "--jitter" flag`},
		{[]string{"--cron", "every tuesday"}, "schedule"},
		{[]string{"--cron", "5 4 * * *", "--tz", "Mars/Base"}, "timezone"},
		{[]string{}, "exactly one of --every, --cron or --at"},
		{[]string{"--every", "1m", "--at", "2099-01-01T00:00:00Z"}, "exactly one"},
		{[]string{"--every", "1m", "--args", "{"}, "not valid JSON"},
		{[]string{"--every", "1m", "--catchup", "sometimes"}, "catchup"},
	} {
		c.fails(exitUsage, []string{tc.msg}, append([]string{"ctl", "schedule", "add", "bad", "--queue", "s", "--task", "t"}, tc.args...)...)
	}
	c.fails(exitNotFound, []string{"queue not found"}, "ctl", "schedule", "add", "x", "--queue", "nosuch", "--task", "t", "--every", "1m")
}

// TestScheduleNotJSONCanBeInspected: a definition written by hand that is
// not JSON shows in ls (table and JSON) and show, with the reason; the JSON
// views used to fail on it with a MarshalJSON error.
func TestScheduleNotJSONCanBeInspected(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "a")
	c.ok("ctl", "schedule", "add", "good", "--queue", "a", "--task", "t", "--every", "1m")
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{c.redis}})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.HSet(ctx, c.prefix+":sched:x", "definition", `{"queue":"a",`).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, c.prefix+":schedule", redis.Z{Score: 0, Member: "x"}).Err(); err != nil {
		t.Fatal(err)
	}

	var list []scheduleJSON
	c.okJSON(&list, "ctl", "schedule", "ls")
	if len(list) != 2 || list[1].Name != "x" || list[1].State != "invalid" || list[1].Error == "" {
		t.Fatalf("want good and x (invalid, with the reason), have %+v", list)
	}
	var raw string
	if err := json.Unmarshal(list[1].Definition, &raw); err != nil || raw != `{"queue":"a",` {
		t.Fatalf("want x's definition as the stored text, have %s (%v)", list[1].Definition, err)
	}
	var x scheduleJSON
	c.okJSON(&x, "ctl", "schedule", "show", "x")
	if x.State != "invalid" || x.Error != list[1].Error {
		t.Fatalf("want show x invalid with the reason %q, have %+v", list[1].Error, x)
	}
	table := c.ok("ctl", "schedule", "ls").stdout
	reason := oneLine(x.Error, 30)
	if !strings.Contains(table, reason[:len(reason)-3]) {
		t.Fatalf("want the table to give x's reason %q, have:\n%s", x.Error, table)
	}
}

// contains reports whether s holds every one of subs.
func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
