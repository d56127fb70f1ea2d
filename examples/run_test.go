package examples_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/examples/gohandler"
	"github.com/drover-dev/drover/queue"
)

// TestEveryExampleRunsAgainstAFleet runs each program in examples/ against
// a real fleet, so that an example cannot rot unnoticed: the Python
// producers (Redis and HTTP), the redis-cli producer, the shell and Python
// tasks, the pooled Python tasks of pool-queue.json, the Go handler,
// schedules.sh and drover.hcl. Each enqueued job must reach `succeeded`.
func TestEveryExampleRunsAgainstAFleet(t *testing.T) {
	needPython(t)
	f := newFleet(t)
	here, _ := os.Getwd()
	repo := filepath.Dir(here)

	// pool-queue.json as shipped, with /opt/drover pointing at this checkout.
	raw, err := os.ReadFile("pool-queue.json")
	if err != nil {
		t.Fatal(err)
	}
	var pooled drover.QueueConfig
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), "/opt/drover", repo)), &pooled); err != nil {
		t.Fatalf("pool-queue.json: %v", err)
	}
	for name, r := range pooled.Tasks {
		if len(r.Command) > 0 && r.Command[0] == "python3" {
			r.Command[0] = python
			pooled.Tasks[name] = r
		}
	}
	if err := f.zk.Queues().Create(context.Background(), pooled); err != nil {
		t.Fatal(err)
	}
	// The per-task examples: shell, Python, and the Go handler.
	hello := drover.QueueConfig{Name: "hello", MaxAttempts: 1, Tasks: map[string]drover.TaskRoute{
		"*":                    {Command: []string{"sh", filepath.Join(here, "tasks", "hello.sh")}},
		"py":                   {Command: []string{python, filepath.Join(here, "tasks", "hello.py")}},
		gohandler.ChecksumTask: {Go: true},
	}}
	if err := f.zk.Queues().Create(context.Background(), hello); err != nil {
		t.Fatal(err)
	}
	// schedules.sh schedules into the queues `drover dev` creates.
	for _, name := range []string{"python", "checksums"} {
		qc := drover.QueueConfig{Name: name, MaxAttempts: 1, Tasks: map[string]drover.TaskRoute{
			"*": {Command: []string{"sh", filepath.Join(here, "tasks", "hello.sh")}}}}
		if err := f.zk.Queues().Create(context.Background(), qc); err != nil {
			t.Fatal(err)
		}
	}
	f.start("worker-1", []string{"worker"})
	url, token := f.startWeb()

	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{f.redis}})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	store, err := queue.New(queue.Config{Client: rdb, Prefix: f.prefix})
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(f.redis, ":")
	env := append(os.Environ(), "REDIS_URL=redis://"+f.redis+"/0", "DROVER_PREFIX="+f.prefix,
		"REDIS_HOST="+host, "REDIS_PORT="+port, "DROVER_URL="+url, "DROVER_TOKEN="+token)
	run := func(t *testing.T, argv ...string) string {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
		return string(out)
	}
	succeeded := func(t *testing.T, q, id string) {
		t.Helper()
		var st drover.JobStatus
		waitFor(t, q+"/"+id+" to succeed", func() bool {
			var err error
			st, err = store.Jobs().JobStatus(context.Background(), q, id, 0)
			return err == nil && st.State == drover.JobSucceeded
		})
	}
	firstField := func(t *testing.T, out string) string {
		fs := strings.Fields(out)
		if len(fs) == 0 {
			t.Fatalf("no output")
		}
		return fs[0]
	}

	t.Run("enqueue.py", func(t *testing.T) {
		id := firstField(t, run(t, python, "enqueue.py", "hello", "greet", `{"who":"enqueue.py"}`))
		succeeded(t, "hello", id)
		id = firstField(t, run(t, python, "enqueue.py", "hello", "py", `{"name":"hello.py"}`, "--id", "hello-py-1"))
		succeeded(t, "hello", id)
	})
	t.Run("http-producer.py", func(t *testing.T) {
		var ans struct{ ID string }
		if err := json.Unmarshal([]byte(run(t, python, "http-producer.py", "enqueue", "hello", "greet", `{"who":"http"}`)), &ans); err != nil || ans.ID == "" {
			t.Fatalf("answer: %v %+v", err, ans)
		}
		succeeded(t, "hello", ans.ID)
		var st struct{ State string }
		if err := json.Unmarshal([]byte(run(t, python, "http-producer.py", "status", "hello", ans.ID)), &st); err != nil || st.State != "succeeded" {
			t.Fatalf("status: %v %+v", err, st)
		}
		run(t, python, "http-producer.py", "batch", "hello", "greet", "3")
	})
	t.Run("enqueue-redis-cli.sh", func(t *testing.T) {
		run(t, "sh", "enqueue-redis-cli.sh", "hello", "greet", `{"who":"redis-cli"}`, "cli-1")
		succeeded(t, "hello", "cli-1")
		run(t, "sh", "enqueue-redis-cli.sh", "hello", "example.checksum", `{"text":"go"}`, "go-1")
		succeeded(t, "hello", "go-1")
	})
	t.Run("pool_tasks.py", func(t *testing.T) {
		id := firstField(t, run(t, python, "enqueue.py", pooled.Name, "checksum", `{"text":"pooled"}`))
		succeeded(t, pooled.Name, id)
		id = firstField(t, run(t, python, "enqueue.py", pooled.Name, "flaky", "null"))
		succeeded(t, pooled.Name, id)
	})
	t.Run("schedules.sh", func(t *testing.T) {
		cmd := exec.Command("sh", "schedules.sh")
		cmd.Env = append(append([]string(nil), f.env...), "DROVER="+droverBinary(t))
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "heartbeat-30s") {
			t.Fatalf("schedules.sh: %v\n%s", err, out)
		}
	})
	t.Run("drover.hcl", func(t *testing.T) {
		if out, err := exec.Command(droverBinary(t), "config", "check", "-c", "drover.hcl").CombinedOutput(); err != nil {
			t.Fatalf("drover config check: %v\n%s", err, out)
		}
	})
}
