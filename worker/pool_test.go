package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/worker/executor"
)

// A queue with a pooled Python route, run by the real executor: a leaking
// handler is recycled at its memory limit without losing a task, a crash
// mid-task is retried in a new child, the state shows the pool, and pausing
// the queue stops its children.

const pooledWorkerTasks = `import os
import drover_pool

KEPT = []

def work(envelope, ctx):
    KEPT.append(bytearray(8 << 20))       # leaks 8 MiB a task
    for i in range(0, len(KEPT[-1]), 4096):
        KEPT[-1][i] = 1                   # resident, not just reserved
    if envelope["id"] == "m03" and ctx.attempt == 0:
        os._exit(9)                       # a crash mid-task
    with open(os.environ["DONE_FILE"], "a") as f:
        f.write("%s %d %d\n" % (envelope["id"], ctx.attempt, os.getpid()))

drover_pool.serve({"work": work})
`

func TestPooledQueueRecyclesRetriesAndReleasesChildren(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed: apt-get install python3 (%v)", err)
	}
	dir := t.TempDir()
	script, done := filepath.Join(dir, "tasks.py"), filepath.Join(dir, "done")
	if err := os.WriteFile(script, []byte(pooledWorkerTasks), 0o644); err != nil {
		t.Fatal(err)
	}
	pythonPath, _ := filepath.Abs(filepath.Join("..", "python"))
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ex.(executor.PoolOwner).Close)

	log := newMemLog()
	const n = 20
	for i := range n {
		m := msg(fmt.Sprintf("m%02d", i))
		m.Task = "work"
		log.add("q", m)
	}
	w := newTestWorker(t, log, ex, nil)
	qc := queueConfig("q", func(qc *drover.QueueConfig) {
		qc.Concurrency = 2
		qc.Tasks = map[string]drover.TaskRoute{"work": {
			Command: []string{python, script},
			Env:     map[string]string{"PYTHONPATH": pythonPath, "DONE_FILE": done},
			Pool:    &drover.PoolConfig{MaxMemoryPerChild: 48 << 20},
		}}
	})
	claim := &memClaim{}
	if err := w.Start(qc, claim); err != nil {
		t.Fatal(err)
	}
	// The crash's retry comes back through the delayed set at position n+1.
	waitFor(t, "offset past the retried message", func() bool { return claim.committed() >= n+1 })

	runs := map[string][]string{} // id → "attempt pid"
	pids := map[string]bool{}
	data, err := os.ReadFile(done)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		runs[f[0]] = append(runs[f[0]], f[1])
		pids[f[2]] = true
	}
	for i := range n {
		id := fmt.Sprintf("m%02d", i)
		want := "0"
		if id == "m03" {
			want = "1" // its first attempt crashed the child; the retry succeeded
		}
		if len(runs[id]) != 1 || runs[id][0] != want {
			t.Errorf("%s: want one successful run at attempt %s, have attempts %v", id, want, runs[id])
		}
	}
	if log.deadCount("q") != 0 || log.retries != 1 {
		t.Errorf("want one retry (the crash) and no dead letter, have %d retries and %d dead", log.retries, log.deadCount("q"))
	}
	// 20 tasks leaking 8 MiB each over two children cannot stay under
	// 48 MiB in fewer than four children.
	if len(pids) < 4 {
		t.Errorf("want the leaking children recycled at 48 MiB (at least 4 children), have %d", len(pids))
	}

	// A child recycled by the last task is replaced in the background, so
	// the state may show its successor starting: wait for live children.
	var st State
	waitFor(t, "the queue's pool with live children in the state", func() bool {
		st = w.State()
		return len(st.Pools) == 1 && st.Pools[0].Queue == "q" && len(st.Pools[0].Children) > 0
	})
	var live []int
	for _, c := range st.Pools[0].Children {
		if c.PID <= 0 || c.RSSBytes <= 0 {
			t.Errorf("state: want a pid and an RSS, have %+v", c)
		}
		live = append(live, c.PID)
	}
	w.SetPause(PauseState{Queues: map[string]bool{"q": true}})
	w.Wake("q")
	for _, pid := range live {
		waitFor(t, fmt.Sprintf("pooled child %d to stop when its queue is paused", pid), func() bool { return exited(pid) })
	}
	waitFor(t, "the paused queue's pool to be gone from the state", func() bool { return len(w.State().Pools) == 0 })
}

// exited reports whether pid is gone or a zombie.
func exited(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// Two ordered queues of one pooled Python route, run by the real executor
// through the worker's route handling: they share one pool (the worker's
// slots), each keeps its own order with one task at a time, and cancelling
// one queue's task kills that task's child only.

const sharedPoolTasks = `import os, time
import drover_pool

def log(what, ctx):
    with open(os.environ["LOG_FILE"], "a") as f:
        f.write("%s %s %s %d\n" % (what, ctx.queue, ctx.id, os.getpid()))

def work(envelope, ctx):
    log("start", ctx)
    if envelope.get("args") == "hold":
        while not os.path.exists(os.environ["RELEASE"] + "-" + ctx.queue):
            time.sleep(0.01)
    log("end", ctx)

drover_pool.serve({"work": work})
`

func TestQueuesShareTheRoutesPoolKeepTheirOrderAndCancelOnlyTheirTask(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed: apt-get install python3 (%v)", err)
	}
	dir := t.TempDir()
	script, logFile, release := filepath.Join(dir, "tasks.py"), filepath.Join(dir, "log"), filepath.Join(dir, "release")
	if err := os.WriteFile(script, []byte(sharedPoolTasks), 0o644); err != nil {
		t.Fatal(err)
	}
	pythonPath, _ := filepath.Abs(filepath.Join("..", "python"))
	ex, err := executor.New(executor.Config{KillGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ex.(executor.PoolOwner).Close)

	log := newMemLog()
	// Queue a holds its 6th task (a05) until released; queue b holds its
	// first (b00) until cancelled.
	const n = 10
	for _, q := range []string{"a", "b"} {
		for i := range n {
			m := msg(fmt.Sprintf("%s%02d", q, i))
			m.Task = "work"
			if (q == "a" && i == 5) || (q == "b" && i == 0) {
				m.Args = []byte(`"hold"`)
			}
			log.add(q, m)
		}
	}
	w := newTestWorker(t, log, ex, func(c *Config) { c.Capacity = 2 })
	claims := map[string]*memClaim{}
	for _, q := range []string{"a", "b"} {
		qc := queueConfig(q, func(qc *drover.QueueConfig) {
			qc.Ordered, qc.Concurrency = true, 1
			qc.Tasks = map[string]drover.TaskRoute{"work": {
				Command: []string{python, script},
				Env:     map[string]string{"PYTHONPATH": pythonPath, "LOG_FILE": logFile, "RELEASE": release},
				Pool:    &drover.PoolConfig{},
			}}
		})
		claims[q] = &memClaim{}
		if err := w.Start(qc, claims[q]); err != nil {
			t.Fatal(err)
		}
	}
	type event struct {
		what, queue, id string
		pid             int
	}
	events := func() []event {
		data, _ := os.ReadFile(logFile)
		var out []event
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			f := strings.Fields(line)
			if len(f) == 4 {
				pid, _ := strconv.Atoi(f[3])
				out = append(out, event{f[0], f[1], f[2], pid})
			}
		}
		return out
	}
	pidOf := func(what, id string) int {
		for _, e := range events() {
			if e.what == what && e.id == id {
				return e.pid
			}
		}
		return 0
	}
	waitFor(t, "a05 and b00 both holding a child", func() bool { return pidOf("start", "a05") > 0 && pidOf("start", "b00") > 0 })
	holdA, holdB := pidOf("start", "a05"), pidOf("start", "b00")
	if holdA == holdB {
		t.Fatalf("two tasks at once in one child %d", holdA)
	}
	if _, err := w.Cancel("b", "b00", "test", CancelDead); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "queue b done after its cancelled head", func() bool { return claims["b"].committed() >= drover.Position(2*n) })
	if !exited(holdB) {
		t.Errorf("the cancelled task's child %d still runs", holdB)
	}
	if exited(holdA) || pidOf("end", "a05") != 0 {
		t.Fatalf("cancelling queue b's task ended queue a's: child %d exited %v", holdA, exited(holdA))
	}
	if err := os.WriteFile(release+"-a", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "queue a done", func() bool { return claims["a"].committed() >= drover.Position(n) })

	// Each queue: its messages in order, one at a time.
	for _, q := range []string{"a", "b"} {
		var seq []string
		for _, e := range events() {
			if e.queue == q {
				seq = append(seq, e.what+" "+e.id)
			}
		}
		var want []string
		for i := range n {
			id := fmt.Sprintf("%s%02d", q, i)
			want = append(want, "start "+id)
			if id != "b00" { // cancelled: no end
				want = append(want, "end "+id)
			}
		}
		if !slices.Equal(seq, want) {
			t.Errorf("queue %s: want %v, have %v", q, want, seq)
		}
	}
	if log.deadCount("b") != 1 || log.deadCount("a") != 0 {
		t.Errorf("want the cancelled b00 dead-lettered alone, have %d dead in a, %d in b", log.deadCount("a"), log.deadCount("b"))
	}
	// One pool for the route, used by both queues, within the slots.
	st := w.State()
	if len(st.Pools) != 1 || st.Pools[0].Queues != 2 || len(st.Pools[0].Children) > 2 {
		t.Fatalf("state: want one pool used by both queues with at most 2 children, have %+v", st.Pools)
	}
	pids := map[int]bool{}
	for _, e := range events() {
		pids[e.pid] = true
	}
	if len(pids) > 3 {
		t.Errorf("want at most 3 children (2 slots and the cancelled one's replacement), have %d", len(pids))
	}
	// A queue that stops stops using the pool; the pool goes with the last.
	var children []int
	for _, c := range st.Pools[0].Children {
		children = append(children, c.PID)
	}
	if err := w.Stop(context.Background(), "a", drover.StopLeave); err != nil {
		t.Fatal(err)
	}
	if st := w.State(); len(st.Pools) != 1 || st.Pools[0].Queues != 1 {
		t.Fatalf("after queue a stopped: want the pool kept for queue b, have %+v", st.Pools)
	}
	if err := w.Stop(context.Background(), "b", drover.StopLeave); err != nil {
		t.Fatal(err)
	}
	for _, pid := range children {
		waitFor(t, fmt.Sprintf("child %d to stop once no queue uses the pool", pid), func() bool { return exited(pid) })
	}
	if st := w.State(); len(st.Pools) != 0 {
		t.Errorf("want no pool once its queues stopped, have %+v", st.Pools)
	}
}
