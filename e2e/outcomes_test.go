package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/execfile"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// Outcomes with real child processes and real Redis: exit 75 is retried with
// backoff until it succeeds; a task that keeps failing is dead-lettered after
// max_attempts with its exit code and stderr tail; a poison envelope written
// by hand is dead-lettered with the reason while the messages after it run.
func TestRetriesDeadLettersAndPoisonEndToEnd(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	ctx := context.Background()
	dir := f.dir
	// flaky exits 75 (EX_TEMPFAIL) on its first two attempts, then 0.
	flaky := filepath.Join(dir, "flaky.sh")
	write(t, flaky, fmt.Sprintf("#!/bin/sh\necho \"$DROVER_ATTEMPT\" >> %s/flaky.attempts\n[ \"$DROVER_ATTEMPT\" -ge 2 ] && exit 0\nexit 75\n", dir))
	// broken always fails with a message on stderr.
	broken := filepath.Join(dir, "broken.sh")
	write(t, broken, "#!/bin/sh\necho \"disk on fire (attempt $DROVER_ATTEMPT)\" >&2\nexit 3\n")
	ok := taskScript(t, dir, filepath.Join(dir, "ok.log"), "")
	if err := f.zk.Queues().Create(ctx, drover.QueueConfig{Name: "out", MaxAttempts: 3,
		Backoff: drover.Backoff{Base: drover.Duration(100 * time.Millisecond), Max: drover.Duration(300 * time.Millisecond)},
		Tasks: map[string]drover.TaskRoute{
			"flaky":  {Command: []string{flaky}},
			"broken": {Command: []string{broken}},
			"ok":     {Command: []string{ok}},
		}}); err != nil {
		t.Fatal(err)
	}
	// A poison entry written by hand, as a buggy producer in another
	// language would: in the log, with an envelope that is not JSON.
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t).Addr})
	defer rdb.Close()
	prefix := envOf(f.env, "DROVER_REDIS_PREFIX")
	if err := rdb.HSet(ctx, prefix+":{out}:msg", "poison-1", "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, prefix+":{out}:log", redis.Z{Score: 1, Member: "poison-1"}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Producer().EnqueueBatch(ctx, []*drover.Message{
		{Queue: "out", Task: "flaky", ID: "flaky-1"},
		{Queue: "out", Task: "broken", ID: "broken-1"},
		{Queue: "out", Task: "ok"}, {Queue: "out", Task: "ok"},
	}); err != nil {
		t.Fatal(err)
	}
	f.startWorker("ow")

	waitFor(t, time.Minute, "two dead letters and the later messages run", func() bool {
		dls, err := f.store.Dead().DeadLetters(ctx, "out", 0, 10)
		return err == nil && len(dls) == 2 && countLines(filepath.Join(dir, "ok.log")) == 2
	})
	waitFor(t, time.Minute, "flaky to succeed on its third attempt", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "flaky.attempts"))
		return string(b) == "0\n1\n2\n"
	})
	poison, err := f.store.Dead().GetDeadLetter(ctx, "out", "poison-1")
	if err != nil {
		t.Fatal(err)
	}
	if string(poison.Raw) != "{not json" || !strings.Contains(poison.Failure.Reason, "poison") {
		t.Fatalf("poison dead letter: want the raw envelope and a reason naming poison, have %q / %q", poison.Raw, poison.Failure.Reason)
	}
	dead, err := f.store.Dead().GetDeadLetter(ctx, "out", "broken-1")
	if err != nil {
		t.Fatal(err)
	}
	if dead.Failure.ExitCode != 3 || !strings.Contains(dead.Failure.StderrTail, "disk on fire (attempt 2)") || !strings.Contains(dead.Failure.Reason, "(attempt 2, the last of max_attempts 3)") {
		t.Fatalf("broken dead letter: want exit 3, the last stderr and one attempt numbering in the reason, have %+v", dead.Failure)
	}
	if _, err := f.store.Dead().GetDeadLetter(ctx, "out", "flaky-1"); err == nil {
		t.Fatal("flaky succeeded on a retry and must not be dead-lettered")
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := execfile.Write(path, []byte(body)); err != nil {
		t.Fatal(err)
	}
}

// envOf returns the value of name in env.
func envOf(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}
