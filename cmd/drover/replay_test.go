package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startWorker runs `drover worker` against the cluster until the test ends
// (SIGTERM, then waited for). Its admin server takes a port the kernel
// picks (the member node records the bound address): a port found free and
// closed again could be taken by a parallel test before the worker binds it.
func (c *cluster) startWorker(name string) {
	c.t.Helper()
	logPath := filepath.Join(c.t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(droverBin, "worker", "--name", name, "--admin-addr", "127.0.0.1:0", "--drain-timeout", "2s")
	cmd.Env = withEnv(c.env, "DROVER_WORKER_SETTLE=100ms")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logf.Close() }()
	c.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				c.t.Errorf("worker %s exited with %v", name, err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			c.t.Errorf("worker %s did not stop within 30s after SIGTERM", name)
		}
		if c.t.Failed() {
			log, _ := os.ReadFile(logPath)
			c.t.Logf("worker %s log:\n%s", name, log)
		}
	})
}

// lines returns the non-empty lines of a file (none when it is missing).
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// waitDone waits until the queue's committed offset has reached pos.
func (c *cluster) waitDone(q string, pos int64) {
	c.t.Helper()
	eventually(c.t, 60*time.Second, func() error {
		var offs []offsetReport
		c.okJSON(&offs, "ctl", "offsets", "show", q)
		if int64(offs[0].Position) < pos {
			dump := c.run("ctl", "dump", "w1", "-o", "json")
			return fmt.Errorf("queue %s committed %d, want ≥ %d; offsets %+v; worker state:\n%s", q, offs[0].Position, pos, offs[0], dump.stdout)
		}
		return nil
	})
}

// TestOffsetsResetToDatetimeReplaysExactlyTheLaterMessages runs a real
// worker: messages are processed, the queue is paused, its offset reset to a
// time between two batches, and after resuming exactly the second batch runs
// again, in order.
func TestOffsetsResetToDatetimeReplaysExactlyTheLaterMessages(t *testing.T) {
	c := newCluster(t)
	out := filepath.Join(t.TempDir(), "ran.txt")
	// max_attempts 1: a replayed message ran once already, and must run
	// again (a reset forgets the starts recorded of what it replays).
	c.ok("ctl", "queue", "create", "replay", "--ordered", "--retention", "1h", "--max-attempts", "1",
		"--task", fmt.Sprintf(`*=/bin/sh -c 'echo "$DROVER_MESSAGE_ID" >> %s'`, out))
	c.startWorker("w1")

	enqueue := func(n int) (ids []string, last int64) {
		for i := 0; i < n; i++ {
			var res struct {
				ID       string `json:"id"`
				Position int64  `json:"position"`
			}
			c.okJSON(&res, "ctl", "enqueue", "replay", "t", "--args", fmt.Sprintf(`{"i":%d}`, i))
			ids, last = append(ids, res.ID), res.Position
		}
		return ids, last
	}
	first, _ := enqueue(3)
	eventually(t, 60*time.Second, func() error {
		if n := len(lines(t, out)); n != 3 {
			return fmt.Errorf("want 3 tasks run, have %d", n)
		}
		return nil
	})
	time.Sleep(20 * time.Millisecond) // positions are µs of Redis's clock: keep the batches apart
	cut := time.Now().UTC()
	time.Sleep(20 * time.Millisecond)
	second, lastPos := enqueue(4)
	c.waitDone("replay", lastPos)
	if ran := lines(t, out); !slices.Equal(ran, append(slices.Clone(first), second...)) {
		t.Fatalf("want every message run once in order, have %v", ran)
	}

	// Owned and running: a reset is refused.
	c.fails(exitRefused, []string{"owned by member w1 and not paused"}, "ctl", "offsets", "reset", "replay", "--to-datetime", cut.Format(time.RFC3339Nano))
	c.ok("ctl", "pause", "--queue", "replay", "--reason", "replay test")
	var res map[string]any
	c.okJSON(&res, "ctl", "offsets", "reset", "replay", "--to-datetime", cut.Format(time.RFC3339Nano))
	if res["lag"].(float64) != 4 {
		t.Fatalf("want 4 messages to replay, have %v", res)
	}
	// Paused: nothing runs yet.
	time.Sleep(500 * time.Millisecond)
	if n := len(lines(t, out)); n != 7 {
		t.Fatalf("want nothing run while paused (7 lines), have %d", n)
	}
	c.ok("ctl", "resume", "--queue", "replay")
	// The owner must notice the reset (the offset node's version moved on)
	// and claim the queue again from the reset offset. An owner that only
	// learns it is fenced from a failed commit never does while it is idle.
	eventually(t, 60*time.Second, func() error {
		if n := len(lines(t, out)); n < 11 {
			return fmt.Errorf("want 11 runs (the 4 messages after the reset time replayed), have %d: "+
				"the owner did not notice that its offset was reset while the queue was paused", n)
		}
		return nil
	})
	c.waitDone("replay", lastPos)
	ran := lines(t, out)
	if want := append(append(slices.Clone(first), second...), second...); !slices.Equal(ran, want) {
		t.Fatalf("want exactly the second batch replayed in order:\nwant %v\nhave %v", want, ran)
	}

	var rep statusReport
	c.okJSON(&rep, "ctl", "status")
	if len(rep.Members) != 1 || rep.Members[0].Name != "w1" || rep.Generation < 1 || rep.RebalanceLeader != "w1" {
		t.Fatalf("want member w1 leading the rebalance at generation ≥ 1, have %+v", rep)
	}
	if q := rep.Queues[0]; q.Owner != "w1" || q.Lag != 0 || q.Paused {
		t.Fatalf("want replay owned by w1, lag 0, not paused; have %+v", q)
	}
	dump := c.ok("ctl", "dump", "w1").stdout
	if !contains(dump, "MEMBER w1", "replay") {
		t.Fatalf("want w1's live state listing replay, have:\n%s", dump)
	}
}
