package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/execfile"
)

// TestDumpShowsThePIDOfARunningTask runs a real worker and a task that
// waits: `ctl dump` gives the task's pid (it showed 0, and the JSON had no
// pid), the pause flags in words (they were raw JSON), and, by admin
// address, works with ZooKeeper down.
func TestDumpShowsThePIDOfARunningTask(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	script := filepath.Join(dir, "wait-for-release.sh")
	if err := execfile.Write(script, []byte("#!/bin/sh\nwhile [ ! -e "+release+" ]; do sleep 0.05; done\n")); err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile(release, nil, 0o644) // let the task end before the worker stops
	c.ok("ctl", "queue", "create", "waits", "--task", "*="+script)
	c.startWorker("w1")
	c.ok("ctl", "enqueue", "waits", "hold")

	type inFlight struct {
		ID  string `json:"id"`
		PID *int   `json:"pid"`
	}
	var st struct {
		Worker struct {
			Queues []struct {
				Name     string     `json:"name"`
				InFlight []inFlight `json:"in_flight"`
			} `json:"queues"`
		} `json:"worker"`
	}
	var task inFlight
	eventually(t, 60*time.Second, func() error {
		r := c.run("ctl", "dump", "w1", "-o", "json")
		if err := jsonUnmarshal(r.stdout, &st); err != nil {
			return fmt.Errorf("%v\n%s", err, r)
		}
		for _, q := range st.Worker.Queues {
			// The task is in flight from its dispatch; its pid is known
			// once the fork returned (it read 0 in between under load).
			if q.Name == "waits" && len(q.InFlight) == 1 && q.InFlight[0].PID != nil && *q.InFlight[0].PID > 0 {
				task = q.InFlight[0]
				return nil
			}
		}
		return fmt.Errorf("want one task of waits in flight with its pid, have:\n%s", r.stdout)
	})
	pid := *task.PID
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), script) {
		t.Fatalf("want pid %d to be the task running %s, have %q (%v)", pid, script, cmdline, err)
	}

	table := c.ok("ctl", "dump", "w1").stdout
	if !contains(table, "PAUSED -\n", task.ID, strconv.Itoa(pid)) || strings.Contains(table, "{") {
		t.Fatalf("want the in-flight task with pid %d and the pause flags in words, have:\n%s", pid, table)
	}
	c.ok("ctl", "pause", "--queue", "waits", "--reason", "dump test")
	eventually(t, 60*time.Second, func() error {
		if table := c.ok("ctl", "dump", "w1").stdout; !strings.Contains(table, "PAUSED queues waits\n") {
			return fmt.Errorf("want PAUSED queues waits, have:\n%s", table)
		}
		return nil
	})

	// By admin address, ZooKeeper is not needed.
	var rep statusReport
	c.okJSON(&rep, "ctl", "status")
	zkDown := withEnv(c.env, "DROVER_ZOOKEEPER_SERVERS="+closedAddr(t), "DROVER_ZOOKEEPER_CONNECT_TIMEOUT=1s")
	if r := runDrover(t, zkDown, "", "ctl", "dump", rep.Members[0].AdminAddr); r.code != 0 || !strings.Contains(r.stdout, "MEMBER w1") {
		t.Fatalf("want w1's state by its admin address with ZooKeeper down, have:\n%s", r)
	}
	if r := runDrover(t, zkDown, "", "ctl", "dead", "ls", "waits"); r.code != 0 {
		t.Fatalf("want dead ls of a queue Redis knows with ZooKeeper down, have:\n%s", r)
	}
}
