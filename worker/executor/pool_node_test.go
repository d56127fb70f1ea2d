package executor

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// The Node pool module (clients/node/src/pool.ts): real pooled Node
// children, and per-task Node processes, run by the executor.

// nodeTasks is a Node program with one handler per case, served by the
// pool module's main(): pooled under DROVER_POOL_PROTOCOL, per task
// otherwise.
const nodeTasks = `import { appendFileSync, writeSync } from "node:fs";
import { Retry, main } from "./dist/pool.js";

main({
  echo(envelope, ctx) {
    console.log("hello", envelope.args.to, "attempt", ctx.attempt, "queue", ctx.queue);
    console.error("to stderr");
  },
  async later() { throw new Retry("not uploaded yet"); },
  fail() { throw new RangeError("width must be > 0"); },
  garbage() { writeSync(4, "not a frame at all"); },
  crash() { process.stderr.write("segfault imminent\n"); process.exit(7); },
  hang(envelope) {
    if (typeof envelope.args === "string") appendFileSync(envelope.args, process.pid + "\n" + process.pid + "\n");
    return new Promise(() => setInterval(() => {}, 1000));
  },
});
`

var (
	nodeBuildOnce sync.Once
	nodeBuildDir  string
	nodeBuildErr  error
)

// nodeProgram builds the Node client into a directory of this test run
// (the checkout's dist/ is left to the Node suite) and returns node and
// the path of nodeTasks beside the build. A missing node or node_modules
// fails the test with the install hint.
func nodeProgram(t testing.TB) (node, program string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed for the pooled Node child's tests: apt-get install -y nodejs npm (or make deps): %v", err)
	}
	_, file, _, _ := runtime.Caller(0)
	client := filepath.Join(filepath.Dir(file), "..", "..", "clients", "node")
	tsc := filepath.Join(client, "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		t.Fatalf("the Node client's dependencies are not installed: (cd clients/node && npm ci), or make deps: %v", err)
	}
	nodeBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "drover-node-pool-")
		if err != nil {
			nodeBuildErr = err
			return
		}
		cmd := exec.Command(node, tsc, "-p", client, "--outDir", filepath.Join(dir, "dist"))
		if out, err := cmd.CombinedOutput(); err != nil {
			nodeBuildErr = &buildError{err, out}
			return
		}
		files := map[string]string{"package.json": `{"type": "module"}`, "tasks.mjs": nodeTasks}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				nodeBuildErr = err
				return
			}
		}
		nodeBuildDir = dir
	})
	if nodeBuildErr != nil {
		t.Fatalf("build the Node client: %v", nodeBuildErr)
	}
	return node, filepath.Join(nodeBuildDir, "tasks.mjs")
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// pooledNode returns a pooled route running nodeTasks.
func pooledNode(t testing.TB, cfg drover.PoolConfig) drover.TaskRoute {
	t.Helper()
	node, program := nodeProgram(t)
	return drover.TaskRoute{Command: []string{node, program}, Pool: &cfg}
}

func TestPoolNodeChild(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledNode(t, drover.PoolConfig{})
	run := func(task string, n int) Result {
		return e.Execute(context.Background(), poolTask(t, task, route, n))
	}
	first := run("echo", 0)
	mustSucceed(t, first)
	if want := "hello a@example.com attempt 0 queue emails\n"; string(first.Stdout) != want {
		t.Errorf("stdout: want %q, have %q", want, first.Stdout)
	}
	if want := "to stderr\n"; string(first.Stderr) != want {
		t.Errorf("stderr: want %q, have %q", want, first.Stderr)
	}
	tests := []struct {
		task      string
		outcome   Outcome
		reasonHas string
		sameChild bool
	}{
		{"later", OutcomeRetry, "retry requested: not uploaded yet", true},
		{"fail", OutcomeFailure, "handler failed: RangeError: width must be > 0", true},
		{"missing", OutcomeFailure, `no Node handler for task "missing"`, true},
		{"garbage", OutcomeFailure, "protocol violation: frame length", false},
		{"crash", OutcomeFailure, "pooled child exited mid-task: exit status 7: segfault imminent", false},
	}
	for i, tt := range tests {
		res := run(tt.task, i+1)
		if res.Outcome != tt.outcome || !strings.Contains(res.Reason, tt.reasonHas) {
			t.Errorf("%s: want %s with %q, have %s (%s)", tt.task, tt.outcome, tt.reasonHas, res.Outcome, res.Reason)
		}
		if !tt.sameChild {
			assertGone(t, res.PID, "replaced Node child")
		}
		next := run("echo", 100+i)
		if next.Outcome != OutcomeSuccess {
			t.Fatalf("after %s: want the next task to succeed, have %s (%s)", tt.task, next.Outcome, next.Reason)
		}
		if (next.PID == res.PID) != tt.sameChild {
			t.Errorf("after %s: child kept: want %v, have pid %d then %d", tt.task, tt.sameChild, res.PID, next.PID)
		}
	}
}

func TestPoolNodeChildIsRecycled(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledNode(t, drover.PoolConfig{MaxTasksPerChild: 2})
	var pids []int
	for i := range 4 {
		res := e.Execute(context.Background(), poolTask(t, "echo", route, i))
		mustSucceed(t, res)
		pids = append(pids, res.PID)
	}
	if pids[0] != pids[1] || pids[2] != pids[3] || pids[1] == pids[2] {
		t.Fatalf("max_tasks_per_child 2: want two tasks per child, have pids %v", pids)
	}
	assertGone(t, pids[0], "recycled Node child")
}

func TestPoolNodeTimeoutKillsTheChild(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledNode(t, drover.PoolConfig{})
	warmed := e.Execute(context.Background(), poolTask(t, "echo", route, 0))
	mustSucceed(t, warmed)
	task := poolTask(t, "hang", route, 1)
	task.Timeout = time.Second
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeTimeout || res.PID != warmed.PID {
		t.Fatalf("want a timeout in the warm child %d, have %s in %d (%s)", warmed.PID, res.Outcome, res.PID, res.Reason)
	}
	assertGone(t, res.PID, "timed-out Node child")
	next := e.Execute(context.Background(), poolTask(t, "echo", route, 2))
	mustSucceed(t, next)
	if next.PID == res.PID {
		t.Errorf("want a fresh child after the timeout, have %d again", next.PID)
	}
}

func TestPoolNodeCancelStopsTheChild(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{KillGrace: 200 * time.Millisecond})
	route := pooledNode(t, drover.PoolConfig{})
	pidFile := filepath.Join(t.TempDir(), "pids")
	task := poolTask(t, "hang", route, 0)
	task.Message.Args = json.RawMessage(strconv.Quote(pidFile))
	task.Timeout = 0
	cancel := make(chan struct{})
	task.Cancel = cancel
	done := make(chan Result, 1)
	go func() { done <- e.Execute(context.Background(), task) }()
	waitForFile(t, pidFile, done)
	close(cancel)
	res := <-done
	if !strings.HasPrefix(res.Reason, "cancelled: sent SIGTERM to its pooled child's process group") || res.Outcome != OutcomeCancelled {
		t.Fatalf("want cancelled, naming the pooled child's group, have %s (%s)", res.Outcome, res.Reason)
	}
	for _, pid := range readPIDs(t, pidFile) {
		assertGone(t, pid, "cancelled Node child")
	}
	next := e.Execute(context.Background(), poolTask(t, "echo", route, 1))
	mustSucceed(t, next)
	if next.PID == res.PID {
		t.Errorf("want the next task in a new child, have the cancelled child %d", next.PID)
	}
}

// The same program without a pool: one process per task, outcomes as exit codes.
func TestNodePerTaskMode(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	node, program := nodeProgram(t)
	route := drover.TaskRoute{Command: []string{node, program}}
	for _, tc := range []struct {
		task    string
		outcome Outcome
		stdout  string
	}{
		{"echo", OutcomeSuccess, "hello a@example.com attempt 2 queue emails\n"},
		{"later", OutcomeRetry, ""},
		{"fail", OutcomeFailure, ""},
	} {
		res := e.Execute(context.Background(), testTask(t, tc.task, route))
		if res.Outcome != tc.outcome || string(res.Stdout) != tc.stdout {
			t.Errorf("%s: want %s with stdout %q, have %s (%s) stdout %q", tc.task, tc.outcome, tc.stdout, res.Outcome, res.Reason, res.Stdout)
		}
	}
}
