package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/execfile"
)

// The lease's decision logic, record by record (no processes, no clock).
func TestLeaseStateFiresOnlyWhenARenewalIsLate(t *testing.T) {
	const bound, grace = 100, 10 // ns: the state only compares numbers
	type kill struct {
		pgid int
		sig  syscall.Signal
	}
	type step struct {
		recs  []*leaseRecord // read in one tick (none: a tick without records)
		now   int64
		kills []kill // signals sent by this step
	}
	renew := func(at int64) *leaseRecord { return &leaseRecord{op: opRenew, stamp: at} }
	track := func(g int) *leaseRecord { return &leaseRecord{op: opTrack, pid: g} }
	untrack := func(g int) *leaseRecord { return &leaseRecord{op: opUntrack, pid: g} }
	rs := func(r ...*leaseRecord) []*leaseRecord { return r }
	term := func(gs ...int) []kill {
		var ks []kill
		for _, g := range gs {
			ks = append(ks, kill{g, syscall.SIGTERM})
		}
		return ks
	}
	sigkill := func(gs ...int) []kill {
		var ks []kill
		for _, g := range gs {
			ks = append(ks, kill{g, syscall.SIGKILL})
		}
		return ks
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"renewed on time: nothing is killed however long it runs", []step{
			{recs: rs(track(7)), now: 10}, {recs: rs(renew(90)), now: 95}, {now: 150},
			{recs: rs(renew(180)), now: 185}, {recs: rs(renew(270)), now: 275}, {now: 360},
		}},
		{"not renewed: SIGTERM past the bound, SIGKILL after the grace", []step{
			{recs: rs(track(7)), now: 10}, {recs: rs(track(8)), now: 10}, {now: 100},
			{now: 101, kills: term(7, 8)}, {now: 105}, {now: 111, kills: sigkill(7, 8)}, {now: 500},
		}},
		{"a group untracked during the grace gets no SIGKILL", []step{
			{recs: rs(track(7)), now: 10}, {now: 101, kills: term(7)}, {recs: rs(untrack(7)), now: 105}, {now: 200},
		}},
		{"a late renewal found on wake kills what was tracked before it (the whole machine froze)", []step{
			{recs: rs(track(7)), now: 10}, {recs: rs(renew(50)), now: 50},
			// Frozen from 50 to 400; the worker thawed first and renewed.
			{recs: rs(renew(395)), now: 400, kills: term(7)}, {recs: rs(track(9)), now: 400},
			{now: 411, kills: sigkill(7)}, {now: 450},
		}},
		{"a supervisor slow to read does not fire on renewals that were on time", []step{
			{recs: rs(track(7)), now: 10},
			{recs: rs(renew(60), renew(120), renew(180), renew(240), renew(290)), now: 300}, {now: 300},
		}},
		{"while expired, a new group is killed at once; a fresh renewal re-arms", []step{
			{now: 101}, {recs: rs(track(7)), now: 120, kills: term(7)},
			{recs: rs(renew(125)), now: 126}, {recs: rs(track(8)), now: 127}, {now: 131, kills: sigkill(7)}, {now: 200},
			{now: 226, kills: term(7, 8)}, // 7 was never untracked: the worker is still frozen
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []kill
			st := newLeaseState(bound, grace, 0, func(g int, sig syscall.Signal) { got = append(got, kill{g, sig}) }, nil)
			for i, s := range tc.steps {
				got = nil
				for _, r := range s.recs {
					st.apply(*r, s.now)
				}
				st.check(s.now)
				if fmt.Sprint(got) != fmt.Sprint(s.kills) {
					t.Fatalf("step %d (now %d): want kills %v, have %v", i, s.now, s.kills, got)
				}
			}
		})
	}
}

// A lease that lapses with no task running says it stopped nothing: a
// worker started before ZooKeeper was reachable printed "SIGTERM to 0
// process groups" on every start.
func TestLeaseFireLineSaysWhatItStopped(t *testing.T) {
	at := time.Date(2030, 6, 3, 4, 5, 6, 0, time.UTC)
	for f, want := range map[leaseFire]string{
		{late: time.Second}:                        "drover lease: fired at 2030-06-03T04:05:06Z: renewal late by 1s (bound 3s): no task to stop",
		{late: 3500 * time.Millisecond, groups: 2}: "drover lease: fired at 2030-06-03T04:05:06Z: renewal late by 3.5s (bound 3s): SIGTERM to 2 process groups, SIGKILL after 1s",
	} {
		if l := f.line(at, 3*time.Second, time.Second); l != want {
			t.Errorf("line: have %q, want %q", l, want)
		}
	}
}

func TestLeaseRecordRoundTrip(t *testing.T) {
	want := leaseRecord{op: opTrack, pid: 4194303, stamp: 1<<62 + 5}
	var b [leaseRecordSize]byte
	want.encode(&b)
	if have := decodeLeaseRecord(b[:]); have != want {
		t.Fatalf("want %+v, have %+v", want, have)
	}
}

func TestNewLeaseValidates(t *testing.T) {
	for _, cfg := range []LeaseConfig{{}, {Bound: -time.Second}, {Bound: time.Second, Grace: -1}} {
		if _, err := NewLease(cfg); err == nil {
			t.Errorf("NewLease(%+v): want an error, have none", cfg)
		}
	}
}

// newTestLease starts a lease whose supervisor writes to a file in the
// test's directory; it is closed when the test ends.
func newTestLease(t *testing.T, bound, grace time.Duration) (*Lease, string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "supervisor.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := NewLease(LeaseConfig{Bound: bound, Grace: grace, Stderr: f})
	if err != nil {
		t.Fatalf("NewLease: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l, logPath
}

// A task whose worker keeps renewing runs to its natural end, however many
// bounds that takes.
func TestLeaseRenewedTaskRunsToItsEnd(t *testing.T) {
	const bound = time.Second
	lease, logPath := newTestLease(t, bound, 100*time.Millisecond)
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(bound / 20)
		defer tick.Stop()
		for {
			if err := lease.Renew(); err != nil {
				t.Errorf("Renew: %v", err)
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { close(stop); <-renewed }()

	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	started := filepath.Join(dir, "started")
	script := writeScript(t, `touch "$2"; while [ ! -e "$1" ]; do sleep 0.05; done; echo finished`)
	e := newTestExecutor(t, Config{Lease: lease})
	done := make(chan Result, 1)
	go func() {
		done <- e.Execute(context.Background(), testTask(t, "long", command(script, release, started)))
	}()
	waitForFile(t, started, done)
	// Let the task live three bounds (the scenario, not synchronisation).
	alive := time.NewTimer(3 * bound)
	select {
	case res := <-done:
		t.Fatalf("the task ended while its lease was renewed: %s (%s)", res.Outcome, res.Reason)
	case <-alive.C:
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Outcome != OutcomeSuccess || !bytes.Contains(res.Stdout, []byte("finished")) {
		t.Fatalf("want success with output %q, have %s (%s) stdout %q", "finished", res.Outcome, res.Reason, res.Stdout)
	}
	if log, _ := os.ReadFile(logPath); bytes.Contains(log, []byte("fired")) {
		t.Fatalf("the lease fired although it was renewed: %s", log)
	}
}

// renewWhile renews l every 10 ms until stop is closed; the returned
// channel is closed when it has stopped.
func renewWhile(t *testing.T, l *Lease, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if err := l.Renew(); err != nil {
				t.Errorf("Renew: %v", err)
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return done
}

// renewing renews l (renewWhile) until the returned stop is called, as a
// live worker does; stop waits for the renewer to end, may be called more
// than once, and is called when the test ends. A test that wants the lease
// fresh at AwaitFresh and at the checks after a start must keep it renewed
// like this, not by one Renew: under -race on a loaded machine, setting up
// an executor or starting a child can take longer than half a short bound.
func renewing(t *testing.T, l *Lease) (stop func()) {
	ch := make(chan struct{})
	done := renewWhile(t, l, ch)
	var once sync.Once
	stop = func() { once.Do(func() { close(ch); <-done }) }
	t.Cleanup(stop)
	return stop
}

// A worker that stops renewing loses its task; a task that ignores SIGTERM
// gets SIGKILL after the grace. The bound is a second, not less: the task
// must start while the lease is fresh (renewed within half the bound, as
// checked right after the fork), and a renewer starved for half a 200 ms
// bound on a loaded machine aborted the start instead.
func TestLeaseKillsATaskIgnoringSIGTERMWithSIGKILL(t *testing.T) {
	lease, logPath := newTestLease(t, time.Second, 100*time.Millisecond)
	stop := make(chan struct{})
	stopped := renewWhile(t, lease, stop)
	started := filepath.Join(t.TempDir(), "started")
	script := writeScript(t, `trap '' TERM; touch "$1"; while :; do sleep 1; done`)
	e := newTestExecutor(t, Config{Lease: lease})
	done := make(chan Result, 1)
	go func() { done <- e.Execute(context.Background(), testTask(t, "stubborn", command(script, started))) }()
	waitForFile(t, started, done)
	close(stop) // the worker "froze": it renews no more
	<-stopped
	res := <-done
	if res.Signal != syscall.SIGKILL || res.Outcome != OutcomeFailure {
		t.Fatalf("want a failure by SIGKILL, have %s signal %d (%s)", res.Outcome, res.Signal, res.Reason)
	}
	log, _ := os.ReadFile(logPath)
	if !bytes.Contains(log, []byte("drover lease: fired at")) {
		t.Fatalf("want the supervisor's notice in its log, have %q", log)
	}
}

// Defect found by a chaos run: a worker frozen between AwaitFresh and the
// fork started the task after it resumed, beside the queue's new owner,
// until the supervisor's next tick killed it. Now the executor checks the
// lease again right after the start and kills the group at once; the
// attempt is aborted (it does not count).
func TestLeaseStaleAtTheStartKillsTheTaskAtOnce(t *testing.T) {
	lease, _ := newTestLease(t, time.Second, 50*time.Millisecond)
	freeze := renewing(t, lease)
	e := newTestExecutor(t, Config{Lease: lease}).(*routeExecutor).exec
	// The freeze: after AwaitFresh passed, the worker renews no more and
	// the last renewal becomes older than half the bound.
	e.beforeStart = func() {
		freeze()
		lease.lastRenew.Store(boottime() - int64(time.Second))
	}
	done := filepath.Join(t.TempDir(), "done")
	task := testTask(t, "frozen", command(writeScript(t, "sleep 30\ntouch "+done)))
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeAborted || res.PID == 0 {
		t.Fatalf("want the started task aborted (with its pid), have %s pid %d (%s)", res.Outcome, res.PID, res.Reason)
	}
	if err := syscall.Kill(res.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the task's process %d is still there: %v", res.PID, err)
	}
}

// The same freeze on a pooled route: the lease went stale after AwaitFresh
// and the checkout, before the task frame was written. The task is aborted
// at once with its child (it does not run beside the queue's new owner),
// and the next task, once the lease is renewed, runs in a new child.
func TestLeaseStaleBeforeAPooledTaskKillsItsChildAtOnce(t *testing.T) {
	lease, _ := newTestLease(t, time.Second, 50*time.Millisecond)
	freeze := renewing(t, lease)
	ex, _ := newPoolExecutor(t, Config{Lease: lease})
	e := ex.(*routeExecutor).exec
	route := pooledGo(drover.PoolConfig{})
	e.beforeStart = func() {
		freeze()
		lease.lastRenew.Store(boottime() - int64(time.Second))
	}
	res := ex.Execute(context.Background(), poolTask(t, poolEcho, route, 0))
	if res.Outcome != OutcomeAborted || res.PID == 0 {
		t.Fatalf("want the pooled task aborted (with its child's pid), have %s pid %d (%s)", res.Outcome, res.PID, res.Reason)
	}
	assertGone(t, res.PID, "pooled child of a task sent under a stale lease")
	e.beforeStart = nil
	// Renewed again, and kept renewed while the next task starts a new
	// child: one Renew would leave it stale again if the start took half
	// the bound, and the task would be aborted again.
	renewing(t, lease)
	next := ex.Execute(context.Background(), poolTask(t, poolEcho, route, 1))
	mustSucceed(t, next)
	if next.PID == res.PID {
		t.Fatalf("the next task ran in the killed child %d", res.PID)
	}
}

// While the lease is expired (the worker resumed from a freeze, its session
// not confirmed), no task starts: Execute waits for a renewal, and is
// aborted before the start when its context ends (the session was lost).
func TestLeaseExpiredStartsNothingUntilRenewed(t *testing.T) {
	// A bound of a second, not 50 ms: once renewed (below), the task must
	// start within half the bound of a renewal and run before the
	// supervisor sees a gap of a bound; 25 and 50 ms of a renewer ticking
	// every 10 ms are within reach of a stall on a loaded machine.
	lease, _ := newTestLease(t, time.Second, 50*time.Millisecond)
	// Never renewed: wait until the lease is past its bound (polling the
	// worker's side of it; the supervisor, with no task to kill, fires
	// silently).
	for deadline := time.Now().Add(30 * time.Second); boottime()-lease.lastRenew.Load() <= int64(lease.bound); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the unrenewed lease never lapsed")
		}
	}
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	e := newTestExecutor(t, Config{Lease: lease})
	task := testTask(t, "late", command("touch", started))

	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan Result, 1)
	go func() { done <- e.Execute(ctx, task) }()
	for deadline := time.Now().Add(30 * time.Second); lease.waiting.Load() == 0; time.Sleep(5 * time.Millisecond) {
		select {
		case res := <-done:
			t.Fatalf("expired lease: want Execute to wait for a renewal, have it end: %s (%s)", res.Outcome, res.Reason)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Execute never waited for the expired lease")
		}
	}
	cancel(fmt.Errorf("session lost"))
	res := <-done
	if res.Outcome != OutcomeAborted || res.PID != 0 {
		t.Fatalf("want aborted before the start, have %s pid %d (%s)", res.Outcome, res.PID, res.Reason)
	}
	if _, err := os.Stat(started); err == nil {
		t.Fatal("the task ran although the lease was expired")
	}

	// Renewed (the session confirmed): the task runs.
	stop := make(chan struct{})
	stopped := renewWhile(t, lease, stop)
	defer func() { close(stop); <-stopped }()
	if res := e.Execute(context.Background(), task); res.Outcome != OutcomeSuccess {
		t.Fatalf("renewed: want success, have %s (%s)", res.Outcome, res.Reason)
	}
	if _, err := os.Stat(started); err != nil {
		t.Fatalf("renewed: the task did not run: %v", err)
	}
}

// A task cannot start under a lease whose supervisor is gone.
func TestLeaseGoneFailsTheTask(t *testing.T) {
	lease, _ := newTestLease(t, time.Hour, time.Second)
	if err := syscall.Kill(lease.SupervisorPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-lease.exited
	e := newTestExecutor(t, Config{Lease: lease})
	res := e.Execute(context.Background(), testTask(t, "unguarded", command("sleep", "3600")))
	if res.Outcome != OutcomeFailure || !strings.Contains(res.Reason, "supervisor is gone") {
		t.Fatalf("want a failure naming the lease, have %s (%s)", res.Outcome, res.Reason)
	}
	if res.PID != 0 {
		assertGone(t, res.PID, "the unguarded task")
	}
}

// The fake worker: this test binary, re-executed, runs one task under a
// lease and renews it every bound/10 from a ticker — until a test SIGSTOPs
// or kills it. Files in its directory say what it started. Its bound is a
// second or more: its task must start within half the bound of a renewal
// (the executor checks right after the fork), which a starved -race
// process on a loaded machine may miss with a shorter one.
const fakeWorkerEnv = "DROVER_TEST_FAKE_WORKER"

// runFakeWorkerIfRequested is called by TestMain.
func runFakeWorkerIfRequested() {
	dir := os.Getenv(fakeWorkerEnv)
	if dir == "" {
		return
	}
	os.Unsetenv(fakeWorkerEnv)
	os.Exit(fakeWorker(dir))
}

func fakeWorker(dir string) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "fake worker:", err); return 3 }
	bound, err := time.ParseDuration(os.Getenv("DROVER_TEST_LEASE_BOUND"))
	if err != nil {
		return fail(err)
	}
	lease, err := NewLease(LeaseConfig{Bound: bound})
	if err != nil {
		return fail(err)
	}
	go func() {
		for range time.Tick(bound / 10) {
			_ = lease.Renew()
		}
	}()
	if err := writeFileAtomic(filepath.Join(dir, "supervisor"), strconv.Itoa(lease.SupervisorPID())); err != nil {
		return fail(err)
	}
	e, err := New(Config{Lease: lease})
	if err != nil {
		return fail(err)
	}
	// The task: a grandchild in its group, then its own pid, then wait.
	script := filepath.Join(dir, "task.sh")
	body := "#!/bin/sh\nsleep 3600 &\necho $! > \"$1/gc.tmp\"; mv \"$1/gc.tmp\" \"$1/gc\"\necho $$ > \"$1/pid.tmp\"; mv \"$1/pid.tmp\" \"$1/pid\"\nwait\n"
	if err := execfile.Write(script, []byte(body)); err != nil {
		return fail(err)
	}
	m := &drover.Message{ID: "fake-1", Queue: "q", Task: "t", Args: json.RawMessage(`{}`)}
	res := e.Execute(context.Background(), &Task{Message: m, Route: command(script, dir), Timeout: time.Hour})
	fmt.Fprintf(os.Stderr, "fake worker: task ended: %s (%s)\n", res.Outcome, res.Reason)
	return 0
}

func writeFileAtomic(path, content string) error {
	if err := os.WriteFile(path+".tmp", []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// fakeWorkerProc is a running fake worker and what it started.
type fakeWorkerProc struct {
	cmd                        *exec.Cmd
	dir, log                   string
	supervisor, task, grandkid int
}

// startFakeWorker starts the fake worker and waits until its task and the
// task's child run.
func startFakeWorker(t *testing.T, bound time.Duration) *fakeWorkerProc {
	t.Helper()
	dir := t.TempDir()
	fw := &fakeWorkerProc{dir: dir, log: filepath.Join(dir, "worker.log")}
	logf, err := os.Create(fw.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	fw.cmd = exec.Command(os.Args[0], "-test.run=^$")
	fw.cmd.Env = append(os.Environ(), fakeWorkerEnv+"="+dir, "DROVER_TEST_LEASE_BOUND="+bound.String())
	fw.cmd.Stderr, fw.cmd.Stdout = logf, logf
	if err := fw.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fw.cmd.Process.Kill()
		fw.cmd.Wait()
		for _, pid := range []int{fw.task, fw.grandkid} {
			if pid > 0 && !processGone(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	waitFor := func(name string) int {
		path := filepath.Join(dir, name)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(path); err == nil {
				return readPID(t, path)
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(fw.log)
				t.Fatalf("the fake worker did not write %s within 30s; its log: %s", name, log)
			}
		}
	}
	fw.supervisor, fw.task, fw.grandkid = waitFor("supervisor"), waitFor("pid"), waitFor("gc")
	return fw
}

// waitGone polls until every pid is gone (a generous overall deadline, no
// timing assertion) and reports the ones that are not.
func waitGone(pids map[string]int) []string {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []string
		for what, pid := range pids {
			if !processGone(pid) {
				left = append(left, fmt.Sprintf("%s (pid %d)", what, pid))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A frozen worker (SIGSTOP, its tasks left running) cannot kill anything:
// the supervisor kills its task's whole group, grandchildren included.
func TestLeaseKillsTheTasksOfAFrozenWorker(t *testing.T) {
	fw := startFakeWorker(t, time.Second)
	if err := fw.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if left := waitGone(map[string]int{"task": fw.task, "grandchild": fw.grandkid}); len(left) > 0 {
		log, _ := os.ReadFile(fw.log)
		t.Fatalf("the frozen worker's %v still run; log: %s", left, log)
	}
	log, _ := os.ReadFile(fw.log)
	if !bytes.Contains(log, []byte("drover lease: fired at")) {
		t.Fatalf("want the supervisor's notice, have log %q", log)
	}
	if processGone(fw.cmd.Process.Pid) {
		t.Fatal("the frozen worker itself is gone: the lease must kill only its tasks")
	}
}

// A whole machine frozen past the bound (worker, supervisor and task
// stopped together, the worker thawed first and renewing at once): the
// supervisor kills on wake.
func TestLeaseKillsOnWakeAfterTheWholeMachineFroze(t *testing.T) {
	const bound = time.Second
	fw := startFakeWorker(t, bound)
	stopped := []int{fw.cmd.Process.Pid, fw.supervisor, -fw.task}
	for _, pid := range stopped {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP %d: %v", pid, err)
		}
	}
	// The freeze lasts three bounds (the fault, not synchronisation).
	time.Sleep(3 * bound)
	for _, pid := range []int{-fw.task, fw.cmd.Process.Pid, fw.supervisor} {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatalf("SIGCONT %d: %v", pid, err)
		}
	}
	if left := waitGone(map[string]int{"task": fw.task, "grandchild": fw.grandkid}); len(left) > 0 {
		log, _ := os.ReadFile(fw.log)
		t.Fatalf("after the thaw, %v still run; log: %s", left, log)
	}
}

// A worker that dies kills its direct child by the parent-death signal,
// but not the child's descendants: the supervisor, seeing the lease pipe
// close, kills the whole group.
func TestLeaseKillsTheGroupsOfAWorkerThatDied(t *testing.T) {
	fw := startFakeWorker(t, time.Hour) // never fires on time: only death counts
	if err := fw.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	fw.cmd.Wait()
	if left := waitGone(map[string]int{"task": fw.task, "grandchild": fw.grandkid, "supervisor": fw.supervisor}); len(left) > 0 {
		t.Fatalf("after the worker died, %v still run", left)
	}
}
