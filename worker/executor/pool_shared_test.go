package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// One pool per route serves every queue (issue 40): the children of a
// route are shared by all the queues that use it, bounded by the worker's
// slots (Task.PoolSize), with tasks waiting their turn first come, first
// served, and the timeout starting when the child gets the task.

// poolAppend appends "<queue> <id>\n" to the file named in args.
const poolAppend = "pool-test-append"

func init() {
	drover.Register(poolAppend, func(ctx context.Context, m *drover.Message) error {
		var path string
		if err := json.Unmarshal(m.Args, &path); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = fmt.Fprintf(f, "%s %s\n", m.Queue, m.ID)
		return err
	})
}

// queueTask is a pooled task of queue with message id, pool size slots.
func queueTask(t testing.TB, handler string, route drover.TaskRoute, queue, id string, slots int) *Task {
	t.Helper()
	task := poolTask(t, handler, route, 0)
	task.Queue, task.Message.Queue, task.Message.ID = queue, queue, id
	task.PoolSize = slots
	return task
}

// childrenRunning returns the live (not zombie) child processes of this
// process whose command line holds marker.
func childrenRunning(t testing.TB, marker string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	var pids []int
	for _, de := range entries {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + de.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state, ppid, …
		if len(f) < 2 || f[1] != me || f[0] == "Z" || f[0] == "X" {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + de.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitersOf returns how many tasks wait for a child of route's pool.
func waitersOf(e Executor, task *Task) int {
	p := e.(*routeExecutor).exec.pools.get(task)
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiters)
}

// eventually polls cond, failing after a minute (which only keeps a broken
// test from hanging).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestPoolTenThousandQueuesOnOnePythonRouteKeepAtMostSlotsChildren(t *testing.T) {
	t.Parallel()
	const slots, queues = 4, 10000
	e, po := newPoolExecutor(t, Config{})
	route := pooledPython(t)
	route.Pool = &drover.PoolConfig{} // no recycling: every child ever started stays countable
	script := route.Command[1]
	// Twice as many tasks at once as slots: the pool is full and tasks
	// wait their turn (the worker's capacity would keep them at slots).
	var (
		next   atomic.Int64
		mu     sync.Mutex
		pids   = map[int]bool{}
		failed atomic.Bool
		wg     sync.WaitGroup
	)
	for range 2 * slots {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < queues && !failed.Load(); i = int(next.Add(1)) - 1 {
				task := queueTask(t, "echo", route, fmt.Sprintf("cust-%05d", i), "m", slots)
				task.Message.Args = json.RawMessage(`{"to":"x"}`)
				res := e.Execute(context.Background(), task)
				mu.Lock()
				pids[res.PID] = true
				n := len(pids)
				mu.Unlock()
				switch {
				case res.Outcome != OutcomeSuccess:
					t.Errorf("queue %d: want success, have %s (%s)", i, res.Outcome, res.Reason)
					failed.Store(true)
				case n > slots:
					t.Errorf("after %d queues: want at most %d children (the slots), have %d", i+1, slots, n)
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		return
	}
	if live := childrenRunning(t, script); len(live) > slots || len(live) == 0 {
		t.Fatalf("want between 1 and %d live Python children after %d queues, have %v", slots, queues, live)
	}
	st := po.PoolStates()
	if len(st) != 1 || st[0].Queues != queues || len(st[0].Children) > slots {
		t.Fatalf("state: want one pool used by %d queues with at most %d children, have %d pools %+v", queues, slots, len(st), st)
	}
	// The pool lives while a queue uses it, and goes with the last.
	for i := range queues - 1 {
		po.ReleaseQueue(fmt.Sprintf("cust-%05d", i))
	}
	if st := po.PoolStates(); len(st) != 1 || st[0].Queues != 1 || len(childrenRunning(t, script)) == 0 {
		t.Fatalf("with one queue left: want the pool and its children kept, have %+v", st)
	}
	po.ReleaseQueue(fmt.Sprintf("cust-%05d", queues-1))
	eventually(t, "every Python child gone after the last queue released the pool", func() bool {
		return len(childrenRunning(t, script)) == 0
	})
	if st := po.PoolStates(); len(st) != 0 {
		t.Errorf("want no pool once no queue uses it, have %+v", st)
	}
}

func TestPoolFullTasksWaitInOrderAndTheirTimeoutStartsInTheChild(t *testing.T) {
	t.Parallel()
	e, _ := newPoolExecutor(t, Config{})
	route := pooledGo(drover.PoolConfig{})
	dir := t.TempDir()
	release, out := filepath.Join(dir, "release"), filepath.Join(dir, "out")
	arg := json.RawMessage(strconv.Quote(out))

	// One slot, held by queue a's task until release exists.
	hold := queueTask(t, poolWaitFile, route, "a", "a1", 1)
	hold.Message.Args = json.RawMessage(strconv.Quote(release))
	started := make(chan int, 1)
	hold.OnStart = func(pid int) { started <- pid }
	holdDone := make(chan Result, 1)
	go func() { holdDone <- e.Execute(context.Background(), hold) }()
	pid := <-started

	// Three queues' tasks queue up behind it, one after the other.
	b := queueTask(t, poolAppend, route, "b", "b1", 1)
	c := queueTask(t, poolAppend, route, "c", "c1", 1)
	d := queueTask(t, poolAppend, route, "d", "d1", 1)
	cancelC := make(chan struct{})
	c.Cancel = cancelC
	d.Timeout = 200 * time.Millisecond
	done := map[string]chan Result{}
	for i, task := range []*Task{b, c, d} {
		task.Message.Args = arg
		ch := make(chan Result, 1)
		done[task.Queue] = ch
		go func() { ch <- e.Execute(context.Background(), task) }()
		eventually(t, fmt.Sprintf("task of queue %s waiting", task.Queue), func() bool { return waitersOf(e, task) == i+1 })
	}
	// A waiting task is cancelled alone: it never runs.
	close(cancelC)
	if res := <-done["c"]; res.Outcome != OutcomeCancelled || res.PID != 0 {
		t.Fatalf("cancelled while waiting: want cancelled, never run, have %s pid %d (%s)", res.Outcome, res.PID, res.Reason)
	}
	// The condition under test: d has waited longer than its timeout.
	<-time.After(2 * d.Timeout)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, <-holdDone)
	for _, q := range []string{"b", "d"} {
		res := <-done[q]
		mustSucceed(t, res)
		if res.PID != pid {
			t.Errorf("queue %s: want the one slot's child %d, have %d", q, pid, res.PID)
		}
	}
	if data, _ := os.ReadFile(out); string(data) != "b b1\nd d1\n" {
		t.Errorf("want b then d, each once (c was cancelled), have %q", data)
	}
}

func TestPoolRecycledChildServesTasksOfEveryQueue(t *testing.T) {
	t.Parallel()
	e, po := newPoolExecutor(t, Config{})
	route := pooledGo(drover.PoolConfig{MaxTasksPerChild: 3})
	var pids []int
	for i := range 12 {
		task := queueTask(t, poolEcho, route, fmt.Sprintf("q%d", i%4), fmt.Sprintf("m%d", i), 1)
		res := e.Execute(context.Background(), task)
		mustSucceed(t, res)
		if want := fmt.Sprintf("handled m%d attempt 0\n", i); string(res.Stdout) != want {
			t.Errorf("task %d: want stdout %q, have %q", i, want, res.Stdout)
		}
		pids = append(pids, res.PID)
	}
	// q0 q1 q2 on the first child, q3 q0 q1 on the next, …: each child
	// serves three queues' tasks in a row, then is replaced.
	for i, pid := range pids {
		if pid != pids[i/3*3] {
			t.Fatalf("want each child to serve 3 tasks of 3 queues in a row, have pids %v", pids)
		}
	}
	for i := 3; i < 12; i += 3 {
		if pids[i] == pids[i-3] {
			t.Fatalf("want a new child after 3 tasks, have pids %v", pids)
		}
		assertGone(t, pids[i-3], "recycled child")
	}
	if st := po.PoolStates(); len(st) != 1 || st[0].Queues != 4 {
		t.Errorf("state: want one pool used by 4 queues, have %+v", st)
	}
	if slices.Contains(pids, 0) {
		t.Errorf("want a pid for every task, have %v", pids)
	}
}
