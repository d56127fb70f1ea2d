package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

func TestQueueCreateUpdateListShowRemove(t *testing.T) {
	c := newCluster(t)
	var created drover.QueueConfig
	c.okJSON(&created, "ctl", "queue", "create", "emails", "--concurrency", "3", "--timeout", "30s", "--retention", "1h",
		"--task", `send=/bin/echo "a b" c`, "--task", "bounce=@go", "--tag", "ssd", "--max-attempts", "7")
	if created.Concurrency != 3 || created.Timeout.Std() != 30*time.Second || created.Retention.Std() != time.Hour || created.MaxAttempts != 7 {
		t.Fatalf("want concurrency 3, timeout 30s, retention 1h, attempts 7; have %+v", created)
	}
	if want := []string{"/bin/echo", "a b", "c"}; !reflect.DeepEqual(created.Tasks["send"].Command, want) || !created.Tasks["bounce"].Go {
		t.Fatalf("want send=%q and bounce=@go, have %+v", want, created.Tasks)
	}
	c.fails(exitRefused, []string{"already exists"}, "ctl", "queue", "create", "emails")

	var pooled drover.QueueConfig
	c.okJSON(&pooled, "ctl", "queue", "create", "thumbs", "--task", "resize=python3 tasks.py",
		"--pool", "resize=max_tasks_per_child=1000,max_memory_per_child=200MiB,max_child_age=1h")
	if p := pooled.Tasks["resize"].Pool; p == nil || *p != (drover.PoolConfig{MaxTasksPerChild: 1000, MaxMemoryPerChild: 200 << 20, MaxChildAge: drover.Duration(time.Hour)}) {
		t.Fatalf("want resize pooled with 1000 tasks, 200MiB, 1h; have %+v", pooled.Tasks["resize"].Pool)
	}
	c.ok("ctl", "queue", "rm", "thumbs")

	c.ok("ctl", "queue", "update", "emails", "--concurrency", "5", "--rm-task", "bounce")
	var shown drover.QueueConfig
	c.okJSON(&shown, "ctl", "queue", "show", "emails")
	if shown.Concurrency != 5 || len(shown.Tasks) != 1 || shown.Timeout.Std() != 30*time.Second || !reflect.DeepEqual(shown.Tags, []string{"ssd"}) {
		t.Fatalf("want concurrency 5, only the send task, timeout and tags kept; have %+v", shown)
	}

	// -f from a file, and from stdin.
	file := filepath.Join(t.TempDir(), "q.json")
	os.WriteFile(file, []byte(`{"ordered": true, "tasks": {"*": {"command": ["/bin/true"]}}}`), 0o644)
	c.ok("ctl", "queue", "create", "ledger", "-f", file, "--retention", "10m")
	r := c.runIn(`{"weight": 3, "tasks": {"*": {"inline": true}}}`, "ctl", "queue", "create", "fromstdin", "-f", "-")
	if r.code != 0 {
		t.Fatalf("want exit 0, have:\n%s", r)
	}
	var all []drover.QueueConfig
	c.okJSON(&all, "ctl", "queue", "ls")
	if len(all) != 3 || all[0].Name != "emails" || all[2].Name != "ledger" || !all[2].Ordered || all[2].Retention.Std() != 10*time.Minute || all[1].Weight != 3 {
		t.Fatalf("want emails, fromstdin (weight 3), ledger (ordered, 10m); have %+v", all)
	}
	if table := c.ok("ctl", "queue", "ls").stdout; !strings.Contains(table, "QUEUE") || !strings.Contains(table, "ledger") {
		t.Fatalf("want a table listing ledger, have:\n%s", table)
	}

	c.ok("ctl", "queue", "rm", "ledger")
	c.fails(exitNotFound, []string{"queue not found"}, "ctl", "queue", "rm", "ledger")
	c.fails(exitNotFound, []string{"queue not found"}, "ctl", "queue", "show", "ledger")
	c.fails(exitNotFound, []string{"queue not found"}, "ctl", "queue", "update", "nosuch", "--weight", "2")
}

func TestQueueFlagErrors(t *testing.T) {
	c := newCluster(t)
	badFile := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(badFile, []byte(`{"concurency": 3}`), 0o644)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--timeout", "soon"}, "--timeout"},
		{[]string{"--retention", "-1h"}, "--retention"},
		{[]string{"--task", "nameonly"}, "want NAME=ARGV"},
		{[]string{"--task", `x=/bin/echo "unterminated`}, "cannot split"},
		{[]string{"--ordered", "--concurrency", "4"}, "concurrency"},
		{[]string{"--backoff-jitter", "2"}, "backoff.jitter"},
		{[]string{"-f", badFile}, "unknown field"},
		{[]string{"--concurrency", "many"}, "invalid argument"},
		{[]string{"--pool", "send"}, "no route for task"},
		{[]string{"--task", "send=@go", "--pool", "send=max_tasks_per_child=-1"}, "max_tasks_per_child"},
		{[]string{"--task", "send=@go", "--pool", "send=max_memory_per_child=lots"}, "max_memory_per_child"},
		{[]string{"--task", "send=@go", "--pool", "send=colour=blue"}, "unknown key"},
		{[]string{"--task", "send=@inline", "--pool", "send"}, "cannot be pooled"},
	} {
		c.fails(exitUsage, []string{tc.msg}, append([]string{"ctl", "queue", "create", "q"}, tc.args...)...)
	}
	c.fails(exitUsage, []string{"invalid queue name"}, "ctl", "queue", "create", "a/b")
	c.fails(exitUsage, []string{"want <name>"}, "ctl", "queue", "create")
}

// --rate-limit 0 removes a limit and its burst (it was refused while a
// burst was set); a burst with --rate-limit 0 is a contradiction; NaN and
// infinities are refused naming the flag (NaN reached the JSON encoder).
func TestQueueRateLimitFlags(t *testing.T) {
	c := newCluster(t)
	var cfg drover.QueueConfig
	c.okJSON(&cfg, "ctl", "queue", "create", "r", "--rate-limit", "5", "--rate-burst", "10")
	if cfg.RateLimit.PerSecond != 5 || cfg.RateLimit.Burst != 10 {
		t.Fatalf("want 5/s with burst 10, have %+v", cfg.RateLimit)
	}
	var off drover.QueueConfig
	c.okJSON(&off, "ctl", "queue", "update", "r", "--rate-limit", "0")
	if off.Name != "r" || off.RateLimit != (drover.RateLimit{}) {
		t.Fatalf("--rate-limit 0: want r with no limit and no burst, have %+v", off)
	}
	c.fails(exitUsage, []string{"--rate-burst 3 with --rate-limit 0"}, "ctl", "queue", "update", "r", "--rate-limit", "0", "--rate-burst", "3")
	for _, v := range []string{"nan", "NaN", "inf", "-Inf"} {
		c.fails(exitUsage, []string{"--rate-limit", "want a finite number"}, "ctl", "queue", "create", "n", "--rate-limit", v)
		c.fails(exitUsage, []string{"--rate-limit", "want a finite number"}, "ctl", "queue", "update", "r", "--rate-limit", v)
	}
	c.fails(exitUsage, []string{"--backoff-jitter", "want a finite number"}, "ctl", "queue", "create", "n", "--backoff-jitter", "nan")
	c.fails(exitUsage, []string{"--rate-limit", "want a finite number"}, "ctl", "family", "create", "f", "--prefix", "f-", "--rate-limit", "nan", "--task", "*=/bin/true")
	c.fails(exitNotFound, []string{"queue not found"}, "ctl", "queue", "show", "n")
}
