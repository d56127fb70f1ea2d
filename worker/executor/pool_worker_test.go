package executor

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// A worker process that dies (SIGTERM, kill -9) must leave no pooled child
// behind. The test binary plays the worker: with DROVER_POOL_TEST_WORKER set
// to a directory it keeps one idle and one busy pooled child, writes their
// pids there, and on SIGTERM closes its executor and exits, as `drover
// worker` does.

const poolTestWorkerEnv = "DROVER_POOL_TEST_WORKER"

// runPoolTestWorkerIfRequested is the test worker's main; it returns at
// once in an ordinary test run.
func runPoolTestWorkerIfRequested() {
	dir := os.Getenv(poolTestWorkerEnv)
	if dir == "" {
		return
	}
	fail := func(err error) {
		os.WriteFile(filepath.Join(dir, "error"), []byte(err.Error()), 0o644)
		os.Exit(1)
	}
	e, err := New(Config{KillGrace: time.Second})
	if err != nil {
		fail(err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	task := func(queue, handler string, args any) *Task {
		a, _ := json.Marshal(args)
		return &Task{
			Message: &drover.Message{ID: queue + "-1", Queue: queue, Task: handler, Args: a},
			Route:   drover.TaskRoute{Go: true, Pool: &drover.PoolConfig{}},
		}
	}
	res := e.Execute(context.Background(), task("idle", poolEcho, nil))
	if res.Outcome != OutcomeSuccess {
		fail(errFromResult(res))
	}
	if err := os.WriteFile(filepath.Join(dir, "idle"), []byte(strconv.Itoa(res.PID)), 0o644); err != nil {
		fail(err)
	}
	go e.Execute(context.Background(), task("busy", poolHang, filepath.Join(dir, "busy")))
	<-sigs
	e.(PoolOwner).Close()
	os.Exit(0)
}

type resultError struct{ r Result }

func (e resultError) Error() string { return string(e.r.Outcome) + ": " + e.r.Reason }

func errFromResult(r Result) error { return resultError{r} }

func TestPoolWorkerDeathLeavesNoChild(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), poolTestWorkerEnv+"="+dir)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() { cmd.Process.Kill() }()
			for _, name := range []string{"idle", "busy"} {
				waitForWorkerFile(t, dir, name, exited)
			}
			idle := readPID(t, filepath.Join(dir, "idle"))
			busy := readPIDs(t, filepath.Join(dir, "busy")) // the child, its grandchild
			t.Cleanup(func() { syscall.Kill(busy[1], syscall.SIGKILL) })
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := <-exited
			if sig == syscall.SIGTERM && err != nil {
				t.Fatalf("the worker did not exit cleanly on SIGTERM: %v", err)
			}
			assertGone(t, idle, "idle pooled child")
			assertGone(t, busy[0], "busy pooled child")
			if sig == syscall.SIGTERM {
				assertGone(t, busy[1], "grandchild in the busy child's group")
			}
		})
	}
}

// waitForWorkerFile waits until the test worker writes dir/name, failing
// if it exits first.
func waitForWorkerFile(t *testing.T, dir, name string, exited <-chan error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return
		}
		select {
		case err := <-exited:
			msg, _ := os.ReadFile(filepath.Join(dir, "error"))
			t.Fatalf("the test worker exited before writing %s: %v %s", name, err, msg)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the test worker did not write %s within a minute", name)
		}
	}
}
