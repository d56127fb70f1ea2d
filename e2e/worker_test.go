package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/execfile"
)

func queueNames(prefix string, n int) []string {
	qs := make([]string, n)
	for i := range qs {
		qs[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return qs
}

// Three workers, 30 queues (10 ordered), 20,000 tasks of a real script:
// every message runs exactly once, ordered queues keep enqueue order.
func TestFleetProcessesEveryMessageExactlyOnce(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	logPath := filepath.Join(f.dir, "executions.log")
	script := taskScript(t, f.dir, logPath, "")
	queues := queueNames("q", 30)
	ordered := map[string]bool{}
	for i, q := range queues {
		ordered[q] = i < 10
		f.createQueue(q, ordered[q], []string{script}, nil)
	}
	for i := 0; i < 3; i++ {
		f.startWorker(fmt.Sprintf("w%d", i), "DROVER_WORKER_CAPACITY=8")
	}
	const total = 20000
	ids := f.enqueue(queues, total)
	waitFor(t, 5*time.Minute, fmt.Sprintf("%d executions", total), func() bool { return countLines(logPath) >= total })

	execs := readExecutions(t, logPath)
	seen := map[string]int{}
	byQueue := map[string][]string{}
	workers := map[int]bool{}
	for _, e := range execs {
		seen[e.id]++
		byQueue[e.queue] = append(byQueue[e.queue], e.id)
		workers[e.workerPID] = true
	}
	for q, want := range ids {
		for _, id := range want {
			if seen[id] != 1 {
				var runs []string
				for _, e := range execs {
					if e.id == id {
						runs = append(runs, fmt.Sprintf("attempt %d pid %d worker %d", e.attempt, e.pid, e.workerPID))
					}
				}
				t.Fatalf("queue %s message %s ran %d times (%s); want exactly once", q, id, seen[id], strings.Join(runs, "; "))
			}
		}
		if ordered[q] && !slices.Equal(byQueue[q], want) {
			t.Fatalf("ordered queue %s ran out of enqueue order", q)
		}
	}
	if len(execs) != total {
		t.Fatalf("executions: want %d, have %d", total, len(execs))
	}
	if len(workers) != 3 {
		t.Fatalf("want the work spread over 3 worker processes, have %d", len(workers))
	}
	// Every queue's committed offset reaches its last message.
	waitFor(t, 30*time.Second, "offsets committed to the end", func() bool {
		for _, q := range queues {
			off, err := f.zk.Claims().Offset(context.Background(), q)
			if err != nil || off.Offset.Position < f.lastPos[q] {
				return false
			}
		}
		return true
	})
}

// kill -9 of a worker mid-run: nothing lost, duplicates only among messages
// the dead worker had started, its task processes gone, its queues resumed
// elsewhere.
func TestKilledWorkerLosesNothing(t *testing.T) {
	f := newFleet(t, 4*time.Second)
	logPath := filepath.Join(f.dir, "executions.log")
	startedPath := filepath.Join(f.dir, "started.log")
	// The task records its start (id, pid) before it sleeps, so that the
	// test knows which messages were in flight in the killed worker.
	script := filepath.Join(f.dir, "slow.sh")
	body := fmt.Sprintf("#!/bin/sh\nprintf '%%s %%s %%s %%s %%s\\n' \"$DROVER_QUEUE\" \"$DROVER_MESSAGE_ID\" \"$DROVER_ATTEMPT\" \"$$\" \"$PPID\" >> %s\nsleep 0.05\nprintf '%%s %%s %%s %%s %%s\\n' \"$DROVER_QUEUE\" \"$DROVER_MESSAGE_ID\" \"$DROVER_ATTEMPT\" \"$$\" \"$PPID\" >> %s\n", startedPath, logPath)
	if err := execfile.Write(script, []byte(body)); err != nil {
		t.Fatal(err)
	}
	queues := queueNames("k", 12)
	for _, q := range queues {
		f.createQueue(q, false, []string{script}, nil)
	}
	victim := f.startWorker("victim", "DROVER_WORKER_CAPACITY=4")
	f.startWorker("a", "DROVER_WORKER_CAPACITY=4")
	f.startWorker("b", "DROVER_WORKER_CAPACITY=4")
	const total = 1500
	ids := f.enqueue(queues, total)
	victimPID := victim.cmd.Process.Pid
	waitFor(t, 2*time.Minute, "the victim to run tasks", func() bool {
		for _, e := range readExecutions(t, logPath) {
			if e.workerPID == victimPID {
				return true
			}
		}
		return false
	})
	victim.cmd.Process.Signal(syscall.SIGKILL)
	<-victim.done
	var victimTasks []int
	for _, e := range readExecutions(t, startedPath) {
		if e.workerPID == victimPID {
			victimTasks = append(victimTasks, e.pid)
		}
	}
	waitFor(t, 3*time.Minute, "every message to finish", func() bool {
		done := map[string]bool{}
		for _, e := range readExecutions(t, logPath) {
			done[e.id] = true
		}
		for _, qids := range ids {
			for _, id := range qids {
				if !done[id] {
					return false
				}
			}
		}
		return true
	})
	// Duplicates: only messages the victim had started (in flight, or
	// finished within the commit interval before the kill).
	startedByVictim := map[string]bool{}
	runs := map[string]int{}
	for _, e := range readExecutions(t, startedPath) {
		runs[e.id]++
		if e.workerPID == victimPID {
			startedByVictim[e.id] = true
		}
	}
	dups := 0
	for id, n := range runs {
		if n > 1 {
			dups++
			if !startedByVictim[id] {
				t.Fatalf("message %s ran %d times but the killed worker never started it", id, n)
			}
		}
	}
	// The victim's task processes died with it (Pdeathsig).
	for _, pid := range victimTasks {
		waitFor(t, time.Minute, fmt.Sprintf("task process %d of the killed worker to be gone", pid), func() bool {
			return syscall.Kill(pid, 0) == syscall.ESRCH
		})
	}
	t.Logf("killed worker had started %d messages; %d ran twice", len(startedByVictim), dups)
}

// SIGTERM: in-flight tasks finish within the drain timeout, offsets are
// committed, and the queues move at once — long before the 30 s session
// timeout could have freed them.
func TestSigtermDrainsAndHandsQueuesOverAtOnce(t *testing.T) {
	f := newFleet(t, 30*time.Second)
	logPath := filepath.Join(f.dir, "executions.log")
	script := taskScript(t, f.dir, logPath, "1")
	queues := queueNames("s", 4)
	for _, q := range queues {
		f.createQueue(q, false, []string{script}, nil)
	}
	leaving := f.startWorker("leaving", "DROVER_WORKER_CAPACITY=8", "DROVER_WORKER_DRAIN_TIMEOUT=20s")
	ids := f.enqueue(queues, 8)
	leavingPID := leaving.cmd.Process.Pid
	waitFor(t, time.Minute, "tasks in flight on the leaving worker", func() bool {
		st := f.state("leaving")
		return st != nil && st.inFlight() > 0
	})
	f.startWorker("stays", "DROVER_WORKER_CAPACITY=8")
	leaving.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-leaving.done:
	case <-time.After(25 * time.Second):
		t.Fatal("the leaving worker did not exit within its drain timeout")
	}
	// Tasks it had started finished (their log line is written at the end).
	finishedByLeaving := 0
	for _, e := range readExecutions(t, logPath) {
		if e.workerPID == leavingPID {
			finishedByLeaving++
		}
	}
	if finishedByLeaving == 0 {
		t.Fatal("want the in-flight tasks of the leaving worker to finish, none did")
	}
	// The rest is done by the remaining worker within the session
	// timeout: the queues were released, not left to expire (that would
	// take 30 s from the exit). 25 s, not 15: the about 24 one-second
	// tasks left, 8 at a time, plus a rebalance, on a loaded 2-core
	// machine under -race.
	waitFor(t, 25*time.Second, "the remaining worker to finish the queues", func() bool {
		return countLines(logPath) >= len(ids)*2
	})
	runs := map[string]int{}
	for _, e := range readExecutions(t, logPath) {
		runs[e.id]++
	}
	for _, qids := range ids {
		for _, id := range qids {
			if runs[id] != 1 {
				t.Fatalf("message %s ran %d times; a graceful handover repeats nothing", id, runs[id])
			}
		}
	}
}

// Pause and resume of a queue, a member and everything: no task starts while
// paused, and the assignment generation does not change.
func TestPauseAndResumeWithoutRebalance(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	logPath := filepath.Join(f.dir, "executions.log")
	script := taskScript(t, f.dir, logPath, "")
	f.createQueue("p0", false, []string{script}, nil)
	f.startWorker("pw", "DROVER_WORKER_CAPACITY=4")
	waitFor(t, time.Minute, "the worker to own p0", func() bool {
		st := f.state("pw")
		return st != nil && len(st.Worker.Queues) == 1
	})
	ctx := context.Background()
	an, err := f.zk.Assignments().Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gen := an.Assignment.Generation
	processed := 0
	for _, tc := range []struct {
		scope drover.PauseScope
		name  string
	}{{drover.PauseQueue, "p0"}, {drover.PauseMember, "pw"}, {drover.PauseAll, ""}} {
		if err := f.zk.Pauses().Set(ctx, tc.scope, tc.name, drover.Pause{By: "test", At: time.Now(), Reason: "e2e"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, "the worker to report the pause", func() bool {
			st := f.state("pw")
			return st != nil && len(st.Worker.Queues) == 1 && st.Worker.Queues[0].Paused
		})
		f.enqueue([]string{"p0"}, 5)
		time.Sleep(1500 * time.Millisecond) // the enqueue notification has long woken the loop
		if n := countLines(logPath); n != processed {
			t.Fatalf("paused by %s: want no task started, have %d new executions", tc.scope, n-processed)
		}
		if err := f.zk.Pauses().Clear(ctx, tc.scope, tc.name); err != nil {
			t.Fatal(err)
		}
		processed += 5
		waitFor(t, 30*time.Second, "the tasks to run after resume", func() bool { return countLines(logPath) == processed })
	}
	an2, err := f.zk.Assignments().Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if an2.Assignment.Generation != gen {
		t.Fatalf("pausing changed the assignment generation from %d to %d", gen, an2.Assignment.Generation)
	}
}
