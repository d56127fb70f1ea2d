package main

import (
	"context"
	"strings"
	"testing"
)

func TestEnqueueAndRevoke(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "jobs", "--task", "*=/bin/true")

	id := strings.TrimSpace(c.ok("ctl", "enqueue", "jobs", "build", "--args", `{"a":1}`, "--header", "trace=x").stdout)
	if len(id) != 26 {
		t.Fatalf("want a 26-character generated id on stdout, have %q", id)
	}
	var first, again struct {
		ID        string `json:"id"`
		Position  int64  `json:"position"`
		Duplicate bool   `json:"duplicate"`
	}
	c.okJSON(&first, "ctl", "enqueue", "jobs", "build", "--id", "report-1")
	c.okJSON(&again, "ctl", "enqueue", "jobs", "build", "--id", "report-1")
	if first.ID != "report-1" || first.Position == 0 || first.Duplicate || again.ID != "report-1" || !again.Duplicate {
		t.Fatalf("want report-1 enqueued once then a duplicate; have %+v then %+v", first, again)
	}

	// The messages are in Redis, as written.
	st := c.store()
	entries, err := st.Log().ReadAfter(context.Background(), "jobs", 0, 10)
	if err != nil || len(entries) != 2 {
		t.Fatalf("want 2 messages in the log, have %d (%v)", len(entries), err)
	}
	m, err := entries[0].Decode()
	if err != nil || m.ID != id || m.Task != "build" || string(m.Args) != `{"a":1}` || m.Headers["trace"] != "x" {
		t.Fatalf("want the first message as enqueued, have %+v (%v)", m, err)
	}

	// Delayed, then revoked once.
	var delayed struct {
		ID  string `json:"id"`
		Due string `json:"due"`
	}
	c.okJSON(&delayed, "ctl", "enqueue", "jobs", "build", "--in", "1h")
	c.ok("ctl", "enqueue", "jobs", "build", "--at", "2099-01-02T03:04:05Z", "--id", "far")
	b, err := st.Log().Backlog(context.Background(), "jobs", 0)
	if err != nil || b.Delayed != 2 || b.Lag != 2 {
		t.Fatalf("want 2 delayed and 2 pending, have %+v (%v)", b, err)
	}
	if out := c.ok("ctl", "revoke", "jobs", delayed.ID).stdout; !strings.Contains(out, "revoked "+delayed.ID) {
		t.Fatalf("want a revoked line, have %q", out)
	}
	c.fails(exitNotFound, []string{"not a delayed job"}, "ctl", "revoke", "jobs", delayed.ID)
	c.fails(exitNotFound, []string{"not a delayed job"}, "ctl", "revoke", "jobs", id) // pending, not delayed
	if b, _ := st.Log().Backlog(context.Background(), "jobs", 0); b.Delayed != 1 {
		t.Fatalf("want 1 delayed job left, have %d", b.Delayed)
	}

	// A queue nobody configured or used is refused unless --force.
	c.fails(exitNotFound, []string{`queue "nosuch"`, "queue not found", "--force"}, "ctl", "enqueue", "nosuch", "build")
	c.ok("ctl", "enqueue", "nosuch", "build", "--force")
	c.ok("ctl", "enqueue", "nosuch", "build") // now it has been used
	c.fails(exitNotFound, []string{"queue not found"}, "ctl", "revoke", "unknown-queue", "x")
}

func TestEnqueueUsageErrors(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "jobs")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--args", `{"a":`}, "not valid JSON"},
		{[]string{"--args", `hello`}, "not valid JSON"},
		{[]string{"--in", "soon"}, `"soon" for "--in" flag: want a duration`},
		{[]string{"--in", "-5m"}, "want a duration ≥ 0"},
		{[]string{"--at", "tomorrow"}, `"tomorrow" for "--at" flag: want RFC 3339`},
		{[]string{"--at", "2030-01-02T03:04:05Z", "--in", "1m"}, "not both"},
		{[]string{"--header", "novalue"}, "want key=value"},
	} {
		c.fails(exitUsage, []string{tc.msg}, append([]string{"ctl", "enqueue", "jobs", "t"}, tc.args...)...)
	}
	// An empty task and an over-long id are bad arguments (they exited 1).
	c.fails(exitUsage, []string{"<task>: must not be empty"}, "ctl", "enqueue", "jobs", "")
	c.fails(exitUsage, []string{"--id: 513 bytes, at most 512"}, "ctl", "enqueue", "jobs", "t", "--id", strings.Repeat("x", 513))
	c.fails(exitUsage, []string{"<id>: must not be empty"}, "ctl", "job", "jobs", "")
	c.fails(exitUsage, []string{"want <queue> <task>"}, "ctl", "enqueue", "jobs")
	c.fails(exitUsage, []string{"invalid queue name"}, "ctl", "enqueue", "a:b", "t")
}

func TestPauseAndResume(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "p")
	if out := c.ok("ctl", "pause", "--queue", "p", "--reason", "smtp outage").stdout; !strings.Contains(out, "paused queue p") {
		t.Fatalf("want a paused line, have %q", out)
	}
	r := c.ok("ctl", "pause", "--member", "w9", "--reason", "disk")
	if !strings.Contains(r.stderr, `no live member is named "w9"`) {
		t.Fatalf("want a warning about an unknown member, have:\n%s", r)
	}
	c.ok("ctl", "pause", "--all")

	s := c.session()
	ps, err := s.Pauses().Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ps.All == nil || ps.Queues["p"].Reason != "smtp outage" || ps.Queues["p"].By == "" || ps.Members["w9"].Reason != "disk" {
		t.Fatalf("want all, queue p (with reason and by) and member w9 paused; have %+v", ps)
	}
	var rep statusReport
	c.okJSON(&rep, "ctl", "status")
	if rep.PausedAll == nil || len(rep.Queues) != 1 || !rep.Queues[0].Paused {
		t.Fatalf("want status to show everything and p paused, have %+v", rep)
	}

	c.ok("ctl", "resume", "--all")
	c.ok("ctl", "resume", "--queue", "p")
	c.ok("ctl", "resume", "--member", "w9")
	c.ok("ctl", "resume", "--member", "w9") // resuming what is not paused is fine
	if ps, _ := s.Pauses().Read(context.Background()); ps.All != nil || len(ps.Queues) != 0 || len(ps.Members) != 0 {
		t.Fatalf("want no pause flags left, have %+v", ps)
	}

	c.fails(exitUsage, []string{"exactly one of --queue, --member or --all"}, "ctl", "pause")
	c.fails(exitUsage, []string{"exactly one of"}, "ctl", "pause", "--all", "--queue", "p")
	c.fails(exitNotFound, []string{"queue not found"}, "ctl", "pause", "--queue", "nosuch")
}
