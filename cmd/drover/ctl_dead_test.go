package main

import (
	"context"
	"strings"
	"testing"

	"github.com/drover-dev/drover"
)

// TestDeadLsRejectsABadPage: --limit 0 or a negative --offset is a usage
// error (it listed nothing, silently).
func TestDeadLsRejectsABadPage(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "d")
	c.fails(exitUsage, []string{"--limit: want ≥ 1, have 0"}, "ctl", "dead", "ls", "d", "--limit", "0")
	c.fails(exitUsage, []string{"--offset: want ≥ 0, have -1"}, "ctl", "dead", "ls", "d", "--offset", "-1")
}

func TestDeadLetters(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "d")
	st := c.store()
	ctx := context.Background()
	var ids []string
	for i := 0; i < 3; i++ {
		res, err := st.Producer().Enqueue(ctx, &drover.Message{Queue: "d", Task: "t", Args: []byte(`{"i":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		entries, err := st.Log().ReadAfter(ctx, "d", res.Position-1, 1)
		if err != nil || len(entries) != 1 {
			t.Fatalf("read back %s: %v", res.ID, err)
		}
		f := drover.Failure{Reason: "exit status 3: boom", ExitCode: 3, StderrTail: "line one\nboom\n"}
		if err := st.Dead().Kill(ctx, "d", res.ID, entries[0].Raw, f); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}

	var list []deadJSON
	c.okJSON(&list, "ctl", "dead", "ls", "d")
	if len(list) != 3 || list[0].Failure.ExitCode != 3 || list[0].Task != "t" {
		t.Fatalf("want 3 dead letters with exit code 3, have %+v", list)
	}
	if table := c.ok("ctl", "dead", "ls", "d").stdout; !strings.Contains(table, "exit status 3: boom") {
		t.Fatalf("want the error in the table, have:\n%s", table)
	}
	show := c.ok("ctl", "dead", "show", "d", ids[0]).stdout
	if !contains(show, "ERROR     exit status 3: boom", "STDERR (tail)\nline one\nboom", `ARGS      {"i":1}`) {
		t.Fatalf("want error, stderr tail and args, have:\n%s", show)
	}

	if out := c.ok("ctl", "dead", "retry", "d", ids[0]).stdout; !strings.Contains(out, "retried "+ids[0]) {
		t.Fatalf("want a retried line, have %q", out)
	}
	if b, _ := st.Log().Backlog(ctx, "d", 0); b.Lag != 1 || b.Dead != 2 {
		t.Fatalf("want the retried message back in the log (lag 1) and 2 dead; have %+v", b)
	}
	c.fails(exitNotFound, []string{"no dead letter " + ids[0]}, "ctl", "dead", "retry", "d", ids[0])
	c.ok("ctl", "dead", "purge", "d", ids[1])
	c.fails(exitNotFound, []string{"no dead letter"}, "ctl", "dead", "purge", "d", ids[1])
	var purged struct{ Purged int }
	c.okJSON(&purged, "ctl", "dead", "purge", "d", "--all")
	if purged.Purged != 1 {
		t.Fatalf("want 1 purged, have %d", purged.Purged)
	}
	c.fails(exitNotFound, []string{"not found"}, "ctl", "dead", "show", "d", ids[2])
	c.fails(exitNotFound, []string{"queue not found"}, "ctl", "dead", "ls", "nosuch")
	c.fails(exitUsage, []string{"give ids or --all"}, "ctl", "dead", "retry", "d")
	c.fails(exitUsage, []string{"give ids or --all"}, "ctl", "dead", "purge", "d", "x", "--all")
}
