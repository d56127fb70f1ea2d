package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/ops"
)

// fakeState is a worker's /debug/state as the fake admin server serves it.
const fakeState = `{"member":"fake-1","suspended":false,"paused":{},"capacity":4,"in_use":1,
"queues":[{"name":"st","committed":0,"done":0,"fetched":5,"buffered":2,"ordered":false,"paused":false,
"in_flight":[{"id":"01ABC","task":"t","attempt":1,"position":5,"pid":4242,"started":"2030-01-01T00:00:00Z","runtime_seconds":1.5}]}],
"pools":[{"queue":"st","queues":3,"route":{"command":["python3","tasks.py"],"pool":{"max_tasks_per_child":1000}},"config":{"max_tasks_per_child":1000},
"children":[{"pid":5151,"busy":true,"tasks_served":937,"rss_bytes":20971520,"started":"2030-01-01T00:00:00Z","age_seconds":90}]}]}`

func TestStatusAndDump(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "st")
	if _, err := c.store().Producer().Enqueue(context.Background(), &drover.Message{Queue: "st", Task: "t"}); err != nil {
		t.Fatal(err)
	}
	c.ok("ctl", "enqueue", "adhoc", "t", "--force") // enqueued to, not configured

	// A member whose admin address is a fake worker's admin server.
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/state" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(fakeState))
	}))
	defer admin.Close()
	s := c.session()
	ctx := context.Background()
	if _, err := s.Group().Join(ctx, drover.Member{Name: "fake-1", Host: "h", PID: 1, AdminAddr: strings.TrimPrefix(admin.URL, "http://"), Capacity: 4, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Group().Join(ctx, drover.Member{Name: "gone-1", AdminAddr: closedAddr(t), Capacity: 1, StartedAt: time.Now(), RedisUnreachable: true}); err != nil {
		t.Fatal(err)
	}

	var rep statusReport
	c.okJSON(&rep, "ctl", "status")
	if len(rep.Members) != 2 || rep.Members[0].Name != "fake-1" || len(rep.Queues) != 2 {
		t.Fatalf("want members fake-1, gone-1 and queues adhoc, st; have %+v", rep)
	}
	if q := rep.Queues[1]; q.Queue != "st" || !q.Configured || q.Lag != 1 || q.LogEnd == 0 || q.Owner != "" {
		t.Fatalf("want st configured, lag 1, unowned; have %+v", q)
	}
	if q := rep.Queues[0]; q.Queue != "adhoc" || q.Configured {
		t.Fatalf("want adhoc listed as not configured, have %+v", q)
	}
	table := c.ok("ctl", "status").stdout
	if !contains(table, "GENERATION", "MEMBER", "fake-1", "QUEUE", "OWNER", "COMMITTED", "LAG", "OLDEST", "adhoc*") {
		t.Fatalf("want the members and queues tables, have:\n%s", table)
	}
	// The member cut off from Redis says so (it gets no queues and does
	// not lead); the one that reaches it says ok. One member reaches
	// Redis, so no leader is just no leader.
	if !regexp.MustCompile(`(?m)^fake-1 .* ok +- *$`).MatchString(table) || !regexp.MustCompile(`(?m)^gone-1 .* unreachable +- *$`).MatchString(table) ||
		!contains(table, "REDIS", "REBALANCE LEADER (none)") {
		t.Fatalf("want REDIS ok for fake-1 and unreachable for gone-1, have:\n%s", table)
	}
	if !rep.Members[1].RedisUnreachable || rep.Members[0].RedisUnreachable {
		t.Fatalf("JSON: want redis_unreachable on gone-1 only, have %+v", rep.Members)
	}

	dump := c.ok("ctl", "dump", "fake-1").stdout
	if !contains(dump, "MEMBER fake-1", "IN USE 1", "01ABC", "4242") {
		t.Fatalf("want the member's state with its in-flight task, have:\n%s", dump)
	}
	// A pool serves every queue of its route: the dump counts them.
	if !contains(dump, "POOL QUEUES", "python3 tasks.py", "5151", "937", "20MiB", "1m30s") || !regexp.MustCompile(`(?m)^3\s+python3 tasks\.py`).MatchString(dump) {
		t.Fatalf("want the pooled child with pid, tasks served, RSS and age, have:\n%s", dump)
	}
	var raw map[string]any
	c.okJSON(&raw, "ctl", "dump", "fake-1")
	var want map[string]any
	json.Unmarshal([]byte(fakeState), &want)
	if raw["member"] != want["member"] || raw["in_use"] != want["in_use"] || len(raw["queues"].([]any)) != 1 {
		t.Fatalf("want the document as served, have %v", raw)
	}
	c.fails(exitNotFound, []string{`member "nosuch"`, "fake-1"}, "ctl", "dump", "nosuch")
	c.fails(exitUnreachable, []string{"GET http://"}, "ctl", "dump", "gone-1")

	// A paused queue says who paused it and why (it said "yes").
	c.ok("ctl", "pause", "--queue", "st", "--reason", "smtp outage")
	if table := c.ok("ctl", "status").stdout; !contains(table, "@", ": smtp outage\n") {
		t.Fatalf("want st paused with who and why, have:\n%s", table)
	}

	// The owner shown is the member holding the claim, read from its node
	// (no assignment names it here).
	if _, err := s.Claims().Claim(ctx, "st", coordinator.Owner{Member: "fake-1"}); err != nil {
		t.Fatal(err)
	}
	var owned statusReport
	c.okJSON(&owned, "ctl", "status")
	if q := owned.Queues[1]; q.Queue != "st" || q.Owner != "fake-1" || q.Assigned != "" {
		t.Fatalf("want st owned by fake-1, unassigned; have %+v", q)
	}
}

func TestUnreachableServers(t *testing.T) {
	c := newCluster(t)
	zkDown := withEnv(c.env, "DROVER_ZOOKEEPER_SERVERS="+closedAddr(t))
	for _, args := range [][]string{
		{"ctl", "status"},
		{"ctl", "queue", "ls"},
		{"ctl", "enqueue", "q", "t"},
		{"ctl", "pause", "--all"},
	} {
		r := runDrover(t, zkDown, "", append(args, "--connect-timeout", "2s")...)
		checkFailure(t, r, exitUnreachable, []string{"connect to ZooKeeper", "within 2s"})
	}
	redisDown := withEnv(c.env, "DROVER_REDIS_ADDRS="+closedAddr(t))
	r := runDrover(t, redisDown, "", "ctl", "enqueue", "q", "t", "--force")
	checkFailure(t, r, exitUnreachable, []string{"reach Redis"})
}

func TestUsageErrors(t *testing.T) {
	c := newCluster(t)
	c.fails(exitUsage, []string{"unknown command"}, "ctl", "nope")
	c.fails(exitUsage, []string{`unknown command "statsu"`, "did you mean status?"}, "ctl", "statsu")
	c.fails(exitUsage, []string{"unknown command"}, "frobnicate")
	c.fails(exitUsage, []string{"unknown flag: --bogus"}, "ctl", "status", "--bogus")
	c.fails(exitUsage, []string{`-o "yaml"`}, "ctl", "status", "-o", "yaml")
	c.fails(exitUsage, []string{"--set \"nokey\": want key=value"}, "ctl", "status", "--set", "nokey")
	c.fails(exitUsage, []string{"no such setting"}, "ctl", "status", "--set", "worker.nope=1")
	r := runDrover(t, withEnv(c.env, "DROVER_ZOOKEEPER_CONNECT_TIMEOUT=soon"), "", "ctl", "status")
	checkFailure(t, r, exitUsage, []string{"env DROVER_ZOOKEEPER_CONNECT_TIMEOUT: zookeeper.connect_timeout: want a duration"})
	if out := c.ok("ctl", "--help").stdout; !contains(out, "Exit codes", "Examples:", "offsets") {
		t.Fatalf("want help with exit codes and examples, have:\n%s", out)
	}
	if out := c.ok("completion", "bash").stdout; !strings.Contains(out, "__start_drover") {
		t.Fatalf("want a bash completion script, have %d bytes", len(out))
	}
	for _, shell := range []string{"zsh", "fish"} {
		if out := c.ok("completion", shell).stdout; !strings.Contains(out, "drover") {
			t.Fatalf("want a %s completion script", shell)
		}
	}
}

func TestDynamicCompletion(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "alpha")
	c.ok("ctl", "queue", "create", "beta")
	out := c.ok("__complete", "ctl", "queue", "show", "").stdout
	if !contains(out, "alpha\n", "beta\n") {
		t.Fatalf("want the queue names offered, have:\n%s", out)
	}
}

// A queue's line of `ctl status -o json` is the console's row
// (ops.QueueRow) and its family, not a copy of it that drifts: every key
// of the row is there with its value (issue 32).
func TestCtlStatusQueueIsTheConsoleRow(t *testing.T) {
	r := ops.QueueRow{Queue: "q", Configured: true, Owned: true, Owner: "w1", Lag: 3, Committed: 7, Error: "x"}
	row, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(queueStatus{QueueRow: r, Family: "fam"})
	if err != nil {
		t.Fatal(err)
	}
	var want, have map[string]any
	if err := json.Unmarshal(row, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(line, &have); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if !reflect.DeepEqual(have[k], v) {
			t.Errorf("key %q: want %v (the console's row), have %v", k, v, have[k])
		}
	}
	if have["family"] != "fam" {
		t.Errorf("family: want fam, have %v", have["family"])
	}
}

// With every member cut off from Redis nobody leads the rebalance (a member
// that cannot reach Redis does not), and the leader line says why rather
// than a bare "(none)".
func TestStatusSaysWhyNoOneLeadsWhenNoMemberReachesRedis(t *testing.T) {
	var out bytes.Buffer
	e := &ctlEnv{a: &app{stdout: &out, stderr: &out}}
	rep := &statusReport{Members: []memberStatus{
		{Member: drover.Member{Name: "w1", RedisUnreachable: true}},
		{Member: drover.Member{Name: "w2", RedisUnreachable: true}},
	}}
	if err := printStatus(e, rep); err != nil {
		t.Fatal(err)
	}
	if !contains(out.String(), "REBALANCE LEADER (none: no member reaches Redis)") {
		t.Fatalf("want the leader line to say no member reaches Redis, have:\n%s", out.String())
	}
	out.Reset()
	rep.Members[1].RedisUnreachable = false
	if err := printStatus(e, rep); err != nil {
		t.Fatal(err)
	}
	if !contains(out.String(), "REBALANCE LEADER (none)  ") {
		t.Fatalf("one member reaches Redis: want a plain (none), have:\n%s", out.String())
	}
}
