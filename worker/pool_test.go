package worker

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

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

	st := w.State()
	if len(st.Pools) != 1 || st.Pools[0].Queue != "q" || len(st.Pools[0].Children) == 0 {
		t.Fatalf("state: want the queue's pool with its children, have %+v", st.Pools)
	}
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
