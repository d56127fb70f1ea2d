package executor

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// Go handlers of the pool tests.
const (
	poolEcho     = "pool-test-echo"      // prints to stdout and stderr
	poolLeak     = "pool-test-leak"      // keeps 16 MiB more after every task
	poolHang     = "pool-test-hang"      // starts a grandchild, announces both pids at the path in args, ignores its context
	poolCrash    = "pool-test-crash"     // exits 3 mid-task on attempt 0, succeeds later
	poolGarbage  = "pool-test-garbage"   // writes bytes that are no frame to fd 4
	poolWrongSeq = "pool-test-wrong-seq" // answers for another task
	poolWaitFile = "pool-test-wait-file" // returns once the file named in args exists
	poolFDs      = "pool-test-fds"       // fails when a program it starts inherits fd 3 or 4
)

var leaked [][]byte

func init() {
	drover.Register(poolEcho, func(ctx context.Context, m *drover.Message) error {
		fmt.Printf("handled %s attempt %d\n", m.ID, m.Attempt)
		fmt.Fprintf(os.Stderr, "note about %s\n", m.ID)
		return nil
	})
	drover.Register(poolLeak, func(ctx context.Context, m *drover.Message) error {
		b := make([]byte, 16<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // touch every page: resident, not just reserved
		}
		leaked = append(leaked, b)
		return nil
	})
	drover.Register(poolHang, func(ctx context.Context, m *drover.Message) error {
		var path string
		if err := json.Unmarshal(m.Args, &path); err != nil {
			return err
		}
		sleep := exec.Command("sleep", "3600") // stays in the child's process group
		if err := sleep.Start(); err != nil {
			return err
		}
		pids := fmt.Sprintf("%d %d", os.Getpid(), sleep.Process.Pid)
		if err := os.WriteFile(path+".tmp", []byte(pids), 0o644); err != nil {
			return err
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return err
		}
		signal := make(chan struct{})
		<-signal // ignores its context and SIGTERM's cancellation
		return nil
	})
	drover.Register(poolCrash, func(ctx context.Context, m *drover.Message) error {
		if m.Attempt == 0 {
			fmt.Fprintln(os.Stderr, "about to crash")
			os.Exit(3)
		}
		return nil
	})
	drover.Register(poolGarbage, func(ctx context.Context, m *drover.Message) error {
		_, err := os.NewFile(poolResultFD, "results").Write([]byte("garbage!"))
		return err
	})
	drover.Register(poolWaitFile, func(ctx context.Context, m *drover.Message) error {
		var path string
		if err := json.Unmarshal(m.Args, &path); err != nil {
			return err
		}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := os.Stat(path); err == nil {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	})
	drover.Register(poolFDs, func(ctx context.Context, m *drover.Message) error {
		// The shell's own [ -e ] opens nothing: it lists what it inherited.
		out, err := exec.CommandContext(ctx, "/bin/sh", "-c",
			`for fd in 3 4; do [ -e /proc/$$/fd/$fd ] && echo "$fd"; done; true`).Output()
		if err != nil {
			return err
		}
		if len(out) > 0 {
			return fmt.Errorf("a program started by the handler inherited fds %q", out)
		}
		return nil
	})
	drover.Register(poolWrongSeq, func(ctx context.Context, m *drover.Message) error {
		frame, _ := appendFrame(nil, resultFrame{Type: frameResult, Seq: 999, Outcome: wireSuccess})
		_, err := os.NewFile(poolResultFD, "results").Write(frame)
		return err
	})
}

// pooledGo is a pooled "go" route.
func pooledGo(pc drover.PoolConfig) drover.TaskRoute {
	return drover.TaskRoute{Go: true, Pool: &pc}
}

// poolTask returns a task for handler on route with a fresh message id.
func poolTask(t testing.TB, handler string, route drover.TaskRoute, n int) *Task {
	t.Helper()
	task := testTask(t, handler, route)
	task.Message.ID = fmt.Sprintf("m%d", n)
	task.Message.Attempt = 0
	task.Envelope = nil
	return task
}

// newPoolExecutor returns an executor whose pools are closed when the test
// ends, and its PoolOwner side.
func newPoolExecutor(t testing.TB, cfg Config) (Executor, PoolOwner) {
	t.Helper()
	e := newTestExecutor(t, cfg)
	po := e.(PoolOwner)
	t.Cleanup(po.Close)
	return e, po
}

func mustSucceed(t testing.TB, res Result) {
	t.Helper()
	if res.Outcome != OutcomeSuccess {
		t.Fatalf("outcome: want success, have %s (%s) stderr %q", res.Outcome, res.Reason, tail(res.Stderr))
	}
}

func TestPoolServesManyTasksInOneChildWithTheirOutput(t *testing.T) {
	t.Parallel()
	e, po := newPoolExecutor(t, Config{})
	route := pooledGo(drover.PoolConfig{})
	var pid int
	for i := range 5 {
		res := e.Execute(context.Background(), poolTask(t, poolEcho, route, i))
		mustSucceed(t, res)
		if i == 0 {
			pid = res.PID
		} else if res.PID != pid {
			t.Fatalf("task %d: want it served by child %d, have %d", i, pid, res.PID)
		}
		// The handler's prints are the task's output and did not disturb
		// the protocol.
		if want := fmt.Sprintf("handled m%d attempt 0\n", i); string(res.Stdout) != want {
			t.Errorf("task %d stdout: want %q, have %q", i, want, res.Stdout)
		}
		if want := fmt.Sprintf("note about m%d\n", i); string(res.Stderr) != want {
			t.Errorf("task %d stderr: want %q, have %q", i, want, res.Stderr)
		}
	}
	if pid == os.Getpid() {
		t.Fatal("want a child process, have the test process")
	}
	st := po.PoolStates()
	if len(st) != 1 || len(st[0].Children) != 1 {
		t.Fatalf("state: want one pool with one child, have %+v", st)
	}
	c := st[0].Children[0]
	if c.PID != pid || c.TasksServed != 5 || c.Busy || c.RSSBytes <= 0 || st[0].Queue != "emails" {
		t.Errorf("state: want child %d idle with 5 tasks served and an RSS, queue emails; have %+v queue %s", pid, c, st[0].Queue)
	}
}

func TestPoolQuietTasksBetweenTalkativeOnesKeepEveryOutputApart(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledGo(drover.PoolConfig{})
	// A task that writes nothing hands its empty capture buffers to the
	// next task; one that writes keeps its own.
	var results []Result
	for i := range 6 {
		handler := handlerNoop
		if i%3 == 1 {
			handler = poolEcho
		}
		res := e.Execute(context.Background(), poolTask(t, handler, route, i))
		mustSucceed(t, res)
		results = append(results, res)
	}
	for i, res := range results {
		wantOut, wantErr := "", ""
		if i%3 == 1 {
			wantOut, wantErr = fmt.Sprintf("handled m%d attempt 0\n", i), fmt.Sprintf("note about m%d\n", i)
		}
		if string(res.Stdout) != wantOut || string(res.Stderr) != wantErr {
			t.Errorf("task %d, read after all six: want stdout %q stderr %q, have %q %q", i, wantOut, wantErr, res.Stdout, res.Stderr)
		}
		if res.PID != results[0].PID {
			t.Errorf("task %d: want child %d, have %d", i, results[0].PID, res.PID)
		}
	}
}

func TestPoolGoChildGetsTheTaskFields(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	task := testTask(t, handlerReport, pooledGo(drover.PoolConfig{}))
	task.Deadline = time.Now().Add(time.Hour).UTC()
	res := e.Execute(context.Background(), task)
	mustSucceed(t, res)
	want := fmt.Sprintf("id=%s task=%s attempt=2 position=1735787045123456 args={\"to\":\"a@example.com\"} deadline=%s\n",
		task.Message.ID, handlerReport, task.Deadline.Format(time.RFC3339Nano))
	if string(res.Stdout) != want {
		t.Errorf("handler saw:\nwant %q\nhave %q", want, res.Stdout)
	}
}

func TestPoolOutcomesOfGoHandlers(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledGo(drover.PoolConfig{})
	tests := []struct {
		handler   string
		outcome   Outcome
		exitCode  int
		reasonHas string
	}{
		{handlerRetry, OutcomeRetry, ExitRetry, "upstream busy"},
		{handlerFail, OutcomeFailure, 1, "boom: the widget is broken"},
		{handlerPanic, OutcomeFailure, 1, "panic: handler lost its mind"},
	}
	var pid int
	for i, tt := range tests {
		res := e.Execute(context.Background(), poolTask(t, tt.handler, route, i))
		if res.Outcome != tt.outcome || !strings.Contains(res.Reason, tt.reasonHas) {
			t.Errorf("%s: want %s with %q, have %s (%s)", tt.handler, tt.outcome, tt.reasonHas, res.Outcome, res.Reason)
		}
		if res.ExitCode != tt.exitCode {
			t.Errorf("%s: exit code: want %d, have %d", tt.handler, tt.exitCode, res.ExitCode)
		}
		// An error or a recovered panic does not end the child.
		if i > 0 && res.PID != pid {
			t.Errorf("%s: want the same child %d, have %d", tt.handler, pid, res.PID)
		}
		pid = res.PID
	}
}

func TestPoolRecyclesAfterMaxTasks(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledGo(drover.PoolConfig{MaxTasksPerChild: 2})
	var pids []int
	for i := range 5 {
		res := e.Execute(context.Background(), poolTask(t, poolEcho, route, i))
		mustSucceed(t, res)
		pids = append(pids, res.PID)
	}
	if pids[0] != pids[1] || pids[2] != pids[3] || pids[1] == pids[2] || pids[3] == pids[4] {
		t.Fatalf("want children serving two tasks each (a a b b c), have pids %v", pids)
	}
	assertGone(t, pids[0], "recycled child")
	assertGone(t, pids[2], "recycled child")
}

func TestPoolStartsTheReplacementAheadAndUsesItAfterTheLastTask(t *testing.T) {
	t.Parallel()
	e, po := newPoolExecutor(t, Config{})
	route := pooledGo(drover.PoolConfig{MaxTasksPerChild: 10}) // the replacement starts at 9 served
	var pids []int
	for i := range 25 {
		task := poolTask(t, poolEcho, route, i)
		task.PoolSize = 1
		res := e.Execute(context.Background(), task)
		mustSucceed(t, res)
		pids = append(pids, res.PID)
		if st := po.PoolStates(); len(st) != 1 || len(st[0].Children)+st[0].Starting > 2 {
			t.Fatalf("after task %d: want the child and at most one replacement, have %+v", i, st)
		}
	}
	for i, pid := range pids {
		if pid != pids[i/10*10] {
			t.Fatalf("want each child to serve exactly 10 tasks in a row, have pids %v", pids)
		}
	}
	if pids[0] == pids[10] || pids[10] == pids[20] {
		t.Fatalf("want three children, have pids %v", pids)
	}
}

func TestPoolRecyclesLeakingChildAtMemoryLimitWithoutLosingATask(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	const limit = 80 << 20 // a Go child starts at a few MiB; each task keeps 16 MiB more
	route := pooledGo(drover.PoolConfig{MaxMemoryPerChild: limit})
	served := map[int]int{}
	var order []int
	for i := range 12 {
		res := e.Execute(context.Background(), poolTask(t, poolLeak, route, i))
		mustSucceed(t, res) // every task ran to success: none lost to a recycle
		if served[res.PID] == 0 {
			order = append(order, res.PID)
		}
		served[res.PID]++
	}
	if len(order) < 2 {
		t.Fatalf("want the leaking child replaced at %d bytes, have one child serving all 12 tasks", limit)
	}
	for _, pid := range order[:len(order)-1] {
		// 5 tasks hold 80 MiB of leaked pages: a child must go at the 5th
		// at the latest. (How early depends on the runtime's own RSS,
		// which the race detector inflates.)
		if n := served[pid]; n > 5 {
			t.Errorf("child %d served %d tasks; want it replaced by the 5th, at %d bytes", pid, n, limit)
		}
		assertGone(t, pid, "recycled child")
	}
}

func TestPoolTimeoutKillsChildGroupAndNextTaskRunsInFreshChild(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{KillGrace: 200 * time.Millisecond})
	route := pooledGo(drover.PoolConfig{})
	first := poolTask(t, poolEcho, route, 0)
	mustSucceed(t, e.Execute(context.Background(), first))

	pidFile := filepath.Join(t.TempDir(), "pids")
	hang := poolTask(t, poolHang, route, 1)
	hang.Message.Args = json.RawMessage(strconv.Quote(pidFile))
	hang.Timeout = 3 * time.Second // the child is warm: the handler starts well within it
	res := e.Execute(context.Background(), hang)
	want := " (timeout 3s): sent SIGTERM to its pooled child's process group, then SIGKILL after 200ms"
	if res.Outcome != OutcomeTimeout || !strings.HasPrefix(res.Reason, "timed out at ") || !strings.HasSuffix(res.Reason, want) {
		t.Fatalf("want a timeout ended by SIGKILL after the grace (timed out at <deadline>%s), have %s (%s)", want, res.Outcome, res.Reason)
	}
	pids := readPIDs(t, pidFile)
	if pids[0] != res.PID {
		t.Errorf("the handler ran in %d, the result says %d", pids[0], res.PID)
	}
	assertGone(t, pids[0], "timed-out pooled child")
	assertGone(t, pids[1], "grandchild in the pooled child's group")

	next := e.Execute(context.Background(), poolTask(t, poolEcho, route, 2))
	mustSucceed(t, next)
	if next.PID == res.PID {
		t.Errorf("want the next task in a fresh child, have the timed-out child %d", next.PID)
	}
}

func TestPoolAnEarlierTasksDeadlineDoesNotEndTheNextTask(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledGo(drover.PoolConfig{})
	// The child's deadline timer is reset for every task: the first
	// task's deadline must not fire into the second. The child is
	// started first, without a deadline: a cold start under -race on a
	// loaded machine took longer than the 300 ms deadline this test had
	// (1 run in 10 beside two `make test`), which is not what it is about.
	warm := e.Execute(context.Background(), poolTask(t, poolEcho, route, 0))
	mustSucceed(t, warm)
	first := poolTask(t, poolEcho, route, 1)
	first.Deadline = time.Now().Add(2 * time.Second)
	res := e.Execute(context.Background(), first)
	mustSucceed(t, res)
	if res.PID != warm.PID {
		t.Fatalf("want the first task in the warm child %d, have %d", warm.PID, res.PID)
	}

	release := filepath.Join(t.TempDir(), "release")
	second := poolTask(t, poolWaitFile, route, 2)
	second.Message.Args = json.RawMessage(strconv.Quote(release))
	second.Deadline = time.Now().Add(time.Hour)
	done := make(chan Result, 1)
	go func() { done <- e.Execute(context.Background(), second) }()
	<-time.After(time.Until(first.Deadline.Add(200 * time.Millisecond))) // the condition under test: the first deadline has passed
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	next := <-done
	mustSucceed(t, next)
	if next.PID != res.PID {
		t.Errorf("want both tasks in child %d, have %d", res.PID, next.PID)
	}
}

func TestPoolProgramsAHandlerStartsDoNotInheritTheProtocolDescriptors(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	res := e.Execute(context.Background(), poolTask(t, poolFDs, pooledGo(drover.PoolConfig{}), 0))
	mustSucceed(t, res)
}

func TestPoolLargeEnvelopeThenSmallOnesInOneChild(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledGo(drover.PoolConfig{})
	// A frame larger than a pipe's buffer is written while the child
	// reads it; its buffer is not kept, and the next frames are whole.
	big := poolTask(t, handlerReport, route, 0)
	big.Message.Args = json.RawMessage(strconv.Quote(strings.Repeat("x", 300<<10)))
	res := e.Execute(context.Background(), big)
	mustSucceed(t, res)
	if !strings.Contains(string(res.Stdout), strings.Repeat("x", 1000)) {
		t.Errorf("want the handler to have seen the large args, have stdout of %d bytes", len(res.Stdout))
	}
	for i := 1; i <= 2; i++ {
		small := e.Execute(context.Background(), poolTask(t, poolEcho, route, i))
		mustSucceed(t, small)
		if want := fmt.Sprintf("handled m%d attempt 0\n", i); string(small.Stdout) != want || small.PID != res.PID {
			t.Errorf("task %d: want %q from child %d, have %q from %d", i, want, res.PID, small.Stdout, small.PID)
		}
	}
}

func TestPoolCrashMidTaskFailsItAndTheRetryRunsInANewChild(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledGo(drover.PoolConfig{})
	task := poolTask(t, poolCrash, route, 0)
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeFailure || res.ExitCode != 3 ||
		!strings.Contains(res.Reason, "exited mid-task: exit status 3: about to crash") {
		t.Fatalf("want a failure saying the child exited 3 mid-task, have %s exit %d (%s)", res.Outcome, res.ExitCode, res.Reason)
	}
	task.Message.Attempt = 1 // the retry the worker schedules for a failure
	retry := e.Execute(context.Background(), task)
	mustSucceed(t, retry)
	if retry.PID == res.PID || retry.PID <= 0 {
		t.Errorf("want the retry in a new child, have pid %d (crashed: %d)", retry.PID, res.PID)
	}
}

func TestPoolProtocolViolationFailsTheTaskWithAReason(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{KillGrace: 200 * time.Millisecond})
	route := pooledGo(drover.PoolConfig{})
	for i, tt := range []struct{ handler, reasonHas string }{
		{poolGarbage, `garbage on the protocol descriptor? first bytes "garb"`},
		{poolWrongSeq, "result for task seq 999, but seq "},
	} {
		res := e.Execute(context.Background(), poolTask(t, tt.handler, route, i))
		if res.Outcome != OutcomeFailure || !strings.HasPrefix(res.Reason, "protocol violation: ") || !strings.Contains(res.Reason, tt.reasonHas) {
			t.Errorf("%s: want a failure with reason \"protocol violation: …%s…\", have %s (%s)", tt.handler, tt.reasonHas, res.Outcome, res.Reason)
		}
		assertGone(t, res.PID, "child that broke the protocol")
		next := e.Execute(context.Background(), poolTask(t, poolEcho, route, 10+i))
		mustSucceed(t, next)
		if next.PID == res.PID {
			t.Errorf("%s: want the next task in a new child, have the same %d", tt.handler, res.PID)
		}
	}
}

func TestPoolAbortKillsTheChild(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	pidFile := filepath.Join(t.TempDir(), "pids")
	task := poolTask(t, poolHang, pooledGo(drover.PoolConfig{}), 0)
	task.Message.Args = json.RawMessage(strconv.Quote(pidFile))
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan Result, 1)
	go func() { done <- e.Execute(ctx, task) }()
	waitForFile(t, pidFile, done)
	cancel(errors.New("queue lost"))
	res := <-done
	if res.Outcome != OutcomeAborted || !strings.Contains(res.Reason, "queue lost") {
		t.Fatalf("want aborted by queue lost, have %s (%s)", res.Outcome, res.Reason)
	}
	for _, pid := range readPIDs(t, pidFile) {
		assertGone(t, pid, "aborted pooled child or its grandchild")
	}
}

func TestPoolChildRunsUnderLimitsAndAsUser(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	task := testTask(t, handlerNofile, pooledGo(drover.PoolConfig{}))
	task.User, task.Limits = "nobody", drover.Limits{OpenFiles: 50}
	for range 2 {
		res := e.Execute(context.Background(), task)
		mustSucceed(t, res)
		if want := "uid=65534 nofile=50/50\n"; string(res.Stdout) != want {
			t.Errorf("handler saw: want %q, have %q", want, res.Stdout)
		}
	}
}

func TestPoolReleaseQueueAndCloseStopChildren(t *testing.T) {
	t.Parallel()
	e, po := newPoolExecutor(t, Config{})
	a := poolTask(t, poolEcho, pooledGo(drover.PoolConfig{}), 0)
	b := poolTask(t, poolEcho, pooledGo(drover.PoolConfig{}), 1)
	b.Queue = "other"
	ra, rb := e.Execute(context.Background(), a), e.Execute(context.Background(), b)
	mustSucceed(t, ra)
	mustSucceed(t, rb)
	if ra.PID != rb.PID {
		t.Fatalf("want both queues served by one child of the route's pool, have %d and %d", ra.PID, rb.PID)
	}
	// Queue other still uses the pool: releasing emails keeps its child.
	po.ReleaseQueue("emails")
	if st := po.PoolStates(); len(st) != 1 || st[0].Queues != 1 || len(st[0].Children) != 1 {
		t.Fatalf("after releasing one of two queues: want the pool with one queue and its child, have %+v", st)
	}
	rb2 := e.Execute(context.Background(), b)
	mustSucceed(t, rb2)
	if rb2.PID != rb.PID {
		t.Fatalf("releasing queue emails stopped the child %d that queue other uses (now %d)", rb.PID, rb2.PID)
	}
	// The last queue goes: so does the pool.
	po.ReleaseQueue("other")
	assertGone(t, rb.PID, "child of a pool no queue uses")
	if st := po.PoolStates(); len(st) != 0 {
		t.Errorf("want the pool dropped with its last queue, have %+v", st)
	}
	rb3 := e.Execute(context.Background(), b)
	mustSucceed(t, rb3)
	po.Close()
	if !processGone(rb3.PID) {
		t.Errorf("child %d still runs after Close returned", rb3.PID)
	}
	if res := e.Execute(context.Background(), b); res.Outcome != OutcomeAborted {
		t.Errorf("a pooled task after Close: want aborted, have %s (%s)", res.Outcome, res.Reason)
	}
}

func TestPoolKeepsAtMostPoolSizeChildren(t *testing.T) {
	t.Parallel()
	e, po := newPoolExecutor(t, Config{})
	route := pooledGo(drover.PoolConfig{})
	// Three tasks at once make three children; with the bound lowered to
	// one, two of them are stopped when they come back.
	done := make(chan Result, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 3 {
		task := poolTask(t, poolEcho, route, i)
		task.PoolSize = 3
		go func() { done <- e.Execute(ctx, task) }()
	}
	for range 3 {
		mustSucceed(t, <-done)
	}
	task := poolTask(t, poolEcho, route, 9)
	task.PoolSize = 1
	for range 3 {
		mustSucceed(t, e.Execute(context.Background(), task))
	}
	st := po.PoolStates()
	if len(st) != 1 || len(st[0].Children) > 1 {
		t.Errorf("want at most one child after the size went down to 1, have %+v", st)
	}
}

// readPIDs reads the space-separated pids the hang handler wrote.
func readPIDs(t testing.TB, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read pids: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file holds %q", b)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 2 {
		t.Fatalf("pid file holds %q, want two pids", b)
	}
	return pids
}

func TestReadFrameRefusesGarbage(t *testing.T) {
	t.Parallel()
	long := binary.BigEndian.AppendUint32(nil, maxChildFrame+1)
	tests := []struct {
		name, in, errHas string
	}{
		{"too long", string(long), "exceeds"},
		{"cut short", "\x00\x00\x00\x10{}", "cut short"},
		{"stray bytes", "ab", "stray bytes"},
	}
	for _, tt := range tests {
		_, err := readFrame(strings.NewReader(tt.in), nil, maxChildFrame)
		if !errors.Is(err, errProtocol) || !strings.Contains(err.Error(), tt.errHas) {
			t.Errorf("%s: want a protocol error with %q, have %v", tt.name, tt.errHas, err)
		}
	}
	if _, err := decodeResult([]byte(`{"type":"result","seq":2,"outcome":"meh"}`), 2); !errors.Is(err, errProtocol) {
		t.Errorf("unknown outcome: want a protocol error, have %v", err)
	}
}

func TestAppendTaskFrameEmbedsTheEnvelope(t *testing.T) {
	t.Parallel()
	env := []byte(`{"id":"m1","args":{"x":[1,2]},"extra":"kept"}`)
	f := taskFrame{Type: frameTask, Seq: 3, Queue: "q", Task: "t", ID: "m1", Deadline: "2026-01-01T00:00:00Z"}
	b := appendTaskFrame(nil, &f, env)
	body, err := readFrame(strings.NewReader(string(b)), nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var back taskFrame
	if err := json.Unmarshal(body, &back); err != nil {
		t.Fatalf("frame %s: %v", body, err)
	}
	if string(back.Envelope) != string(env) || back.Seq != 3 || back.Deadline != f.Deadline {
		t.Errorf("want the envelope and fields back, have %s", body)
	}
}

func TestPoolTaskAfterReleaseRunsInANewPool(t *testing.T) {
	t.Parallel()
	e, po := newPoolExecutor(t, Config{})
	task := poolTask(t, poolEcho, pooledGo(drover.PoolConfig{}), 0)
	first := e.Execute(context.Background(), task)
	mustSucceed(t, first)
	// The queue loop may hand over a task it dispatched just before the
	// pause released the pool: it still runs.
	po.ReleaseQueue("emails")
	second := e.Execute(context.Background(), task)
	mustSucceed(t, second)
	if second.PID == first.PID {
		t.Errorf("want a new child after the release, have %d again", second.PID)
	}
}

func TestPoolRecyclesAChildPastItsMaxAge(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	// Every child is past a 1 ns age by the end of its first task.
	route := pooledGo(drover.PoolConfig{MaxChildAge: drover.Duration(time.Nanosecond)})
	seen := map[int]bool{}
	for i := range 3 {
		res := e.Execute(context.Background(), poolTask(t, poolEcho, route, i))
		mustSucceed(t, res)
		if seen[res.PID] {
			t.Fatalf("task %d ran in child %d again, which is past max_child_age", i, res.PID)
		}
		seen[res.PID] = true
		assertGone(t, res.PID, "child past its max age")
	}
}

func TestPoolStopsIdleChildren(t *testing.T) {
	t.Parallel()
	e, po := newPoolExecutor(t, Config{})
	ps := e.(*routeExecutor).exec.pools
	ps.idleTimeout, ps.sweepEvery = 50*time.Millisecond, 10*time.Millisecond // before the first pool
	res := e.Execute(context.Background(), poolTask(t, poolEcho, pooledGo(drover.PoolConfig{}), 0))
	mustSucceed(t, res)
	assertGoneWithin(t, res.PID, "idle child", time.Minute)
	deadline := time.Now().Add(time.Minute)
	for len(po.PoolStates()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("want the empty pool dropped, have %+v", po.PoolStates())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertGoneWithin polls until pid is gone, failing after bound (which
// only keeps a broken test from hanging).
func assertGoneWithin(t *testing.T, pid int, what string, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPoolReportsThePIDWhileTheTaskRuns(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	task := poolTask(t, poolEcho, pooledGo(drover.PoolConfig{}), 0)
	started := make(chan int, 1)
	task.OnStart = func(pid int) { started <- pid }
	res := e.Execute(context.Background(), task)
	mustSucceed(t, res)
	select {
	case pid := <-started:
		if pid != res.PID {
			t.Errorf("OnStart: want the child's pid %d, have %d", res.PID, pid)
		}
	default:
		t.Fatal("OnStart was not called")
	}
}

// The bound is a second: the tasks must start while the lease is fresh
// (renewed within half the bound, checked right after the frame is
// written), and a renewer starved for half a 200 ms bound on a loaded
// machine aborted the first task instead.
func TestPoolChildIsKilledWhenTheWorkerStopsRenewingItsLease(t *testing.T) {
	lease, logPath := newTestLease(t, time.Second, 100*time.Millisecond)
	stop := make(chan struct{})
	stopped := renewWhile(t, lease, stop)
	e, _ := newPoolExecutor(t, Config{Lease: lease})
	route := pooledGo(drover.PoolConfig{})
	mustSucceed(t, e.Execute(context.Background(), poolTask(t, poolEcho, route, 0)))
	pidFile := filepath.Join(t.TempDir(), "pids")
	hang := poolTask(t, poolHang, route, 1)
	hang.Message.Args = json.RawMessage(strconv.Quote(pidFile))
	done := make(chan Result, 1)
	go func() { done <- e.Execute(context.Background(), hang) }()
	waitForFile(t, pidFile, done)
	close(stop) // the worker "froze": it renews no more
	<-stopped
	res := <-done
	if res.Outcome != OutcomeFailure || res.Signal == 0 {
		t.Fatalf("want the pooled child killed by the lease, have %s signal %d (%s)", res.Outcome, res.Signal, res.Reason)
	}
	for _, pid := range readPIDs(t, pidFile) {
		assertGone(t, pid, "pooled child or its grandchild under an expired lease")
	}
	log, _ := os.ReadFile(logPath)
	if !strings.Contains(string(log), "drover lease: fired at") {
		t.Fatalf("want the supervisor's notice in its log, have %q", log)
	}
}
