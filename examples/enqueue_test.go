package examples_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// TestEnqueueRedisCLIEscapesItsStrings: the shell example builds the
// envelope with printf; a task name holding a quote or a backslash used to
// produce broken JSON (a poison message). The message it enqueues now
// decodes with the name as given, and control characters are refused.
func TestEnqueueRedisCLIEscapesItsStrings(t *testing.T) {
	srv := testenv.Redis(t)
	prefix := testenv.Prefix(t)
	host, port, _ := strings.Cut(srv.Addr, ":")
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command("sh", append([]string{"enqueue-redis-cli.sh"}, args...)...)
		cmd.Env = append(os.Environ(), "REDIS_HOST="+host, "REDIS_PORT="+port, "DROVER_PREFIX="+prefix)
		return cmd.CombinedOutput()
	}
	task := `say "hi" \ bye`
	if out, err := run("q", task, `{"who":"it's \"me\""}`, "id-1"); err != nil {
		t.Fatalf("enqueue: %v\n%s", err, out)
	}
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	raw, err := rdb.HGet(context.Background(), prefix+":{q}:msg", "id-1").Result()
	if err != nil {
		t.Fatalf("read the envelope: %v", err)
	}
	m, err := drover.DecodeMessage([]byte(raw))
	if err != nil || m.Task != task || string(m.Args) != `{"who":"it's \"me\""}` {
		t.Fatalf("want a valid envelope with task %q, have %v: %s", task, err, raw)
	}
	if out, err := run("q", "two\nlines"); err == nil || !strings.Contains(string(out), "control characters") {
		t.Fatalf("want a task name with a newline refused, have %v:\n%s", err, out)
	}
}
