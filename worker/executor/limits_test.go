package executor

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/drover-dev/drover"
)

func TestExecLimitsReachTheTask(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	task := testTask(t, "limits", command("/bin/sh", "-c", "ulimit -Sn; ulimit -Hn; ulimit -Sv; ulimit -St; ulimit -Ht"))
	task.Limits = drover.Limits{OpenFiles: 64, AddressSpace: 300 << 20, CPUSeconds: 7}
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeSuccess {
		t.Fatalf("outcome: want success, have %s (%s) stderr %q", res.Outcome, res.Reason, res.Stderr)
	}
	// ulimit -v is in KiB; the CPU hard limit is one second above the soft.
	want := "64\n64\n307200\n7\n8\n"
	if string(res.Stdout) != want {
		t.Errorf("limits seen by the task: want %q, have %q", want, res.Stdout)
	}
}

func TestExecWithoutLimitsInheritsTheWorkers(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	res := e.Execute(context.Background(), testTask(t, "limits", command("/bin/sh", "-c", "ulimit -v")))
	if have := strings.TrimSpace(string(res.Stdout)); have != "unlimited" {
		t.Errorf("ulimit -v without limits: want unlimited, have %q", have)
	}
}

func TestExecAddressSpaceLimit(t *testing.T) {
	t.Parallel()
	// Not a Go program: the Go runtime reserves address space erratically
	// (it may not even start under 1 GB), so RLIMIT_AS suits other
	// languages; bound Go tasks with a cgroup instead.
	python, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Fatalf("this test needs python3 as a task program (apt-get install python3): %v", err)
	}
	e := newTestExecutor(t, Config{})
	limits := drover.Limits{AddressSpace: 200 << 20}
	tests := []struct {
		name      string
		route     drover.TaskRoute
		outcome   Outcome
		stderrHas string
	}{
		{
			"python allocating 500 MB fails",
			command(python, "-c", "b = bytearray(500 * 1024 * 1024); print(len(b))"),
			OutcomeFailure, "MemoryError",
		},
		{
			"python allocating 20 MB succeeds",
			command(python, "-c", "b = bytearray(20 * 1024 * 1024); print(len(b))"),
			OutcomeSuccess, "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := testTask(t, "alloc", tt.route)
			task.Limits = limits
			res := e.Execute(context.Background(), task)
			if res.Outcome != tt.outcome {
				t.Fatalf("outcome: want %s, have %s (%s) stderr %q", tt.outcome, res.Outcome, res.Reason, tail(res.Stderr))
			}
			if !strings.Contains(string(res.Stderr), tt.stderrHas) {
				t.Errorf("stderr: want %q in it, have %q", tt.stderrHas, tail(res.Stderr))
			}
		})
	}
}

func TestExecNegativeLimitFailsBeforeStart(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	task := testTask(t, "job", command("true"))
	task.Limits = drover.Limits{OpenFiles: 10, CPUSeconds: -1}
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeFailure || res.PID != 0 || !strings.Contains(res.Reason, "limits.cpu_seconds") {
		t.Errorf("want a failure before start naming limits.cpu_seconds, have %s pid %d (%s)", res.Outcome, res.PID, res.Reason)
	}
}

func TestExecCPULimit(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	task := testTask(t, "spin", command("/bin/sh", "-c", "while :; do :; done"))
	task.Limits = drover.Limits{CPUSeconds: 1}
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeFailure || (res.Signal != syscall.SIGXCPU && res.Signal != syscall.SIGKILL) {
		t.Errorf("want a failure by SIGXCPU or SIGKILL, have %s signal %v (%s)", res.Outcome, res.Signal, res.Reason)
	}
}

func TestTrampolineArgsRoundTrip(t *testing.T) {
	t.Parallel()
	l := drover.Limits{AddressSpace: 1 << 30, CPUSeconds: 0, OpenFiles: 100}
	for _, mode := range []string{"", childModeGo} {
		args := trampolineArgs("drover", l, mode, "/usr/bin/env", []string{"env", "-i", "--", "$(x)"})
		s, err := parseTrampolineArgs(args)
		if err != nil {
			t.Fatalf("parse %q: %v", args, err)
		}
		if s.limits != l || s.childMode != mode || s.path != "/usr/bin/env" || strings.Join(s.argv, " ") != "env -i -- $(x)" {
			t.Errorf("round trip of %q: have %+v", args, s)
		}
	}
	for _, bad := range [][]string{
		{"drover", childArgExec, "1", "2", "3", "-", "/bin/true"},         // no argv
		{"drover", "serve", "1", "2", "3", "-", "/bin/true", "true"},      // not the marker
		{"drover", childArgExec, "x", "2", "3", "-", "/bin/true", "true"}, // not a number
		{"drover", childArgExec, "1", "-2", "3", "-", "/bin/true", "true"},
	} {
		if _, err := parseTrampolineArgs(bad); err == nil {
			t.Errorf("parse %q: want an error, have none", bad)
		}
	}
}

// tail returns the last 300 bytes of b, for failure messages.
func tail(b []byte) string {
	if len(b) > 300 {
		b = b[len(b)-300:]
	}
	return string(b)
}

// Between its limits and the exec, the trampoline allocates nothing: under
// RLIMIT_AS a heap allocation that needs a new span kills the Go process
// ("fatal error: runtime: cannot allocate memory" from syscall.Exec's argv
// in CI, with a 300 MB limit, before the exec was prepared beforehand). An
// exec that fails also reports why without allocating.
func TestPreparedExecDoesNotAllocate(t *testing.T) {
	x, err := prepareExec("/nonexistent/drover-task", []string{"drover-task", "a"}, []string{"A=1"})
	if err != nil {
		t.Fatalf("prepareExec: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	x.stderr = int(w.Fd())
	if n := testing.AllocsPerRun(5, x.exec); n != 0 {
		t.Errorf("a failed exec allocated %v times, want 0", n)
	}
	w.Close()
	out, _ := io.ReadAll(r)
	want := "drover: exec /nonexistent/drover-task: no such file or directory\n"
	if first, _, _ := strings.Cut(string(out), "\n"); first+"\n" != want {
		t.Errorf("a failed exec wrote %q, want %q", out, want)
	}
}

// A task with an address-space limit and no open-files limit sees the soft
// RLIMIT_NOFILE a task without limits sees, although the trampoline (a Go
// program, which raises its own soft limit at start) is between. Not
// parallel: it lowers this process's soft limit so that there is a
// difference to see, and the parallel tests wait for it.
func TestExecAddressSpaceLimitKeepsTheOpenFilesLimit(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	if orig.Max < 2048 {
		t.Fatalf("this test needs a hard open-files limit of at least 2048, have %d (ulimit -Hn)", orig.Max)
	}
	low := syscall.Rlimit{Cur: 1000, Max: orig.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig) })
	e := newTestExecutor(t, Config{})
	task := testTask(t, "limits", command("/bin/sh", "-c", "ulimit -Sn"))
	task.Limits = drover.Limits{AddressSpace: 300 << 20}
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeSuccess {
		t.Fatalf("outcome: want success, have %s (%s) stderr %q", res.Outcome, res.Reason, res.Stderr)
	}
	if have := strings.TrimSpace(string(res.Stdout)); have != "1000" {
		t.Errorf("soft open-files limit of a task with only an address-space limit: want 1000 (the worker's), have %s", have)
	}
}
