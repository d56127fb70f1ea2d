package executor

import (
	"context"
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
