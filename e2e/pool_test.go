package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// A `drover worker` with a pooled Python route: warm children serve the
// queue, its state shows them, and neither SIGTERM nor kill -9 of the worker
// leaves one behind.

const e2ePoolTasks = `import json, os, subprocess, sys, time
import drover_pool

def record(envelope, ctx):
    print("recording", envelope["id"])     # stdout must not disturb the protocol
    if envelope.get("args") == "hang":
        sleeper = subprocess.Popen(["sleep", "3600"])  # stays in the child's process group
        with open(os.environ["HANG_FILE"] + ".tmp", "w") as f:
            f.write("%d %d" % (os.getpid(), sleeper.pid))
        os.rename(os.environ["HANG_FILE"] + ".tmp", os.environ["HANG_FILE"])
        time.sleep(3600)
    with open(os.environ["DONE_FILE"], "a") as f:
        f.write("%s %d\n" % (envelope["id"], os.getpid()))

drover_pool.serve({"record": record})
`

func TestPooledWorkerLeavesNoChildBehind(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed: apt-get install python3 (%v)", err)
	}
	pythonPath, err := filepath.Abs(filepath.Join("..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			f := newFleet(t, 10*time.Second)
			script := filepath.Join(f.dir, "tasks.py")
			if err := os.WriteFile(script, []byte(e2ePoolTasks), 0o644); err != nil {
				t.Fatal(err)
			}
			done, hang := filepath.Join(f.dir, "done"), filepath.Join(f.dir, "hang")
			f.createQueue("pooled", false, []string{python, script}, func(qc *drover.QueueConfig) {
				qc.Concurrency = 3
				r := qc.Tasks["*"]
				r.Env = map[string]string{"PYTHONPATH": pythonPath, "DONE_FILE": done, "HANG_FILE": hang}
				r.Pool = &drover.PoolConfig{MaxTasksPerChild: 100}
				qc.Tasks["*"] = r
			})
			w := f.startWorker("pool-worker", "DROVER_WORKER_DRAIN_TIMEOUT=2s")
			const n = 30
			f.enqueue([]string{"pooled"}, n)
			waitFor(t, 2*time.Minute, "the pooled queue's messages to run", func() bool { return countLines(done) >= n })
			pids := map[int]bool{}
			for _, line := range strings.Split(strings.TrimSpace(readFile(t, done)), "\n") {
				pid, _ := strconv.Atoi(strings.Fields(line)[1])
				pids[pid] = true
			}
			if len(pids) > 3 {
				t.Errorf("want at most 3 children (the concurrency) to serve %d tasks, have %d", n, len(pids))
			}
			var children []int
			waitFor(t, 30*time.Second, "the pool in the worker's state", func() bool {
				st := f.state("pool-worker")
				if st == nil || len(st.Worker.Pools) != 1 {
					return false
				}
				children = children[:0]
				for _, c := range st.Worker.Pools[0].Children {
					children = append(children, c.PID)
				}
				return len(children) > 0
			})
			if _, err := f.store.Producer().Enqueue(context.Background(), &drover.Message{Queue: "pooled", Task: "record", Args: []byte(`"hang"`)}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, time.Minute, "the hanging task to start", func() bool { _, err := os.Stat(hang); return err == nil })
			var busy, grandchild int
			if _, err := fmt.Sscanf(readFile(t, hang), "%d %d", &busy, &grandchild); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(grandchild, syscall.SIGKILL) })

			w.cmd.Process.Signal(sig)
			select {
			case <-w.done:
			case <-time.After(time.Minute):
				t.Fatalf("the worker did not exit after %s", sig)
			}
			gone := append([]int{busy}, children...)
			if sig == syscall.SIGTERM {
				// The drain ran out; the worker killed the busy child's
				// whole group before it exited.
				gone = append(gone, grandchild)
			}
			for _, pid := range gone {
				waitFor(t, time.Minute, fmt.Sprintf("process %d of the stopped worker's pool to be gone", pid), func() bool {
					return processGone(pid)
				})
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// processGone reports whether pid no longer runs (or is a zombie whose
// reaper has not come by yet).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
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
