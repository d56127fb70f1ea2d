package executor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/hashicorp/go-hclog"
)

// TestExecReportsThePIDWhileTheTaskRuns: OnStart gets the process id while
// the task still runs (the worker shows it in /debug/state), and it is the
// one the task itself and the Result report.
func TestExecReportsThePIDWhileTheTaskRuns(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	task := testTask(t, "job", command(writeScript(t, "echo $$; while [ ! -e "+release+" ]; do sleep 0.01; done")))
	started := make(chan int, 1)
	task.OnStart = func(pid int) { started <- pid }
	done := make(chan Result, 1)
	go func() { done <- e.Execute(context.Background(), task) }()
	var pid int
	select {
	case pid = <-started:
	case res := <-done:
		t.Fatalf("want OnStart while the task runs, have it ended first: %+v", res)
	}
	if pid <= 0 || processGone(pid) {
		t.Fatalf("want the running task's pid, have %d (gone: %v)", pid, processGone(pid))
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.PID != pid || strings.TrimSpace(string(res.Stdout)) != strconv.Itoa(pid) {
		t.Fatalf("want pid %d in the Result and the task's own $$, have %d and %q", pid, res.PID, res.Stdout)
	}
}

func TestExecExitCodes(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	tests := []struct {
		name       string
		script     string
		outcome    Outcome
		exitCode   int
		signal     syscall.Signal
		stderrTail string
	}{
		{"exit 0 succeeds", "echo fine; exit 0", OutcomeSuccess, 0, 0, ""},
		{"exit 75 retries", "echo 'db locked' >&2; exit 75", OutcomeRetry, 75, 0, "db locked\n"},
		{"exit 3 fails", "echo 'bad input' >&2; exit 3", OutcomeFailure, 3, 0, "bad input\n"},
		{"killed by a signal fails", "echo dying >&2; kill -KILL $$", OutcomeFailure, -1, syscall.SIGKILL, "dying\n"},
		{"segfault fails", "kill -SEGV $$", OutcomeFailure, -1, syscall.SIGSEGV, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := e.Execute(context.Background(), testTask(t, "job", command(writeScript(t, tt.script))))
			if res.Outcome != tt.outcome {
				t.Errorf("outcome: want %s, have %s (%s)", tt.outcome, res.Outcome, res.Reason)
			}
			if res.ExitCode != tt.exitCode {
				t.Errorf("exit code: want %d, have %d", tt.exitCode, res.ExitCode)
			}
			if res.Signal != tt.signal {
				t.Errorf("signal: want %v, have %v", tt.signal, res.Signal)
			}
			if string(res.Stderr) != tt.stderrTail {
				t.Errorf("stderr: want %q, have %q", tt.stderrTail, res.Stderr)
			}
			if res.PID <= 0 {
				t.Errorf("pid: want > 0, have %d", res.PID)
			}
			if res.Reason == "" {
				t.Error("reason: want text, have none")
			}
		})
	}
}

func TestExecFailureReasonCarriesLastStderrLine(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	res := e.Execute(context.Background(), testTask(t, "job",
		command(writeScript(t, "echo 'step 1' >&2; echo 'fatal: no such table' >&2; exit 3"))))
	if want := "exit status 3: fatal: no such table"; res.Reason != want {
		t.Errorf("reason: want %q, have %q", want, res.Reason)
	}
	f := res.Failure(time.Unix(0, 0))
	if f.ExitCode != 3 || f.StderrTail != "step 1\nfatal: no such table\n" || f.Reason != res.Reason {
		t.Errorf("failure: want exit 3, stderr tail and reason, have %+v", f)
	}
}

func TestExecEnvironment(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{Env: []string{
		"PATH=/usr/bin:/bin", "KEPT=base", "OVERRIDDEN=base",
		"DROVER_REDIS_PASSWORD=secret", "DROVER_QUEUE=forged",
	}})
	task := testTask(t, "report", drover.TaskRoute{
		Command: []string{"env"},
		Env:     map[string]string{"OVERRIDDEN": "route", "ADDED": "route"},
	})
	deadline := time.Date(2030, 5, 6, 7, 8, 9, 123456789, time.UTC)
	task.Deadline = deadline
	task.Queue = "emails-read-from"
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeSuccess {
		t.Fatalf("outcome: want success, have %s (%s)", res.Outcome, res.Reason)
	}
	env := envOf(res.Stdout)
	want := map[string]string{
		"DROVER_QUEUE":      "emails-read-from",
		"DROVER_TASK":       "report",
		"DROVER_MESSAGE_ID": task.Message.ID,
		"DROVER_ATTEMPT":    "2",
		"DROVER_POSITION":   "1735787045123456",
		"DROVER_DEADLINE":   deadline.Format(time.RFC3339Nano),
		"KEPT":              "base",
		"OVERRIDDEN":        "route",
		"ADDED":             "route",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s: want %q, have %q", k, v, env[k])
		}
	}
	for _, k := range []string{"DROVER_REDIS_PASSWORD", childEnv} {
		if v, ok := env[k]; ok {
			t.Errorf("%s: want it absent, have %q", k, v)
		}
	}
	if n := strings.Count("\n"+string(res.Stdout), "\nOVERRIDDEN="); n != 1 {
		t.Errorf("OVERRIDDEN: want it once, have it %d times:\n%s", n, res.Stdout)
	}
}

func TestExecRefusesReservedRouteEnv(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	task := testTask(t, "job", drover.TaskRoute{Command: []string{"true"}, Env: map[string]string{"DROVER_TASK": "x"}})
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeFailure || res.PID != 0 || !strings.Contains(res.Reason, "DROVER_TASK") {
		t.Errorf("want a failure before start naming DROVER_TASK, have %s pid %d (%s)", res.Outcome, res.PID, res.Reason)
	}
}

func TestExecNoDeadlineLeavesDeadlineUnset(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	task := testTask(t, "job", command("env"))
	task.Timeout = 0
	res := e.Execute(context.Background(), task)
	if v, ok := envOf(res.Stdout)[EnvDeadline]; ok || res.Outcome != OutcomeSuccess {
		t.Errorf("want success without %s, have %s and %q", EnvDeadline, res.Outcome, v)
	}
}

func TestExecDefaultDeadlineComesFromClockAndTimeout(t *testing.T) {
	t.Parallel()
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	e := newTestExecutor(t, Config{Clock: fixedClock{now}})
	task := testTask(t, "job", command("env"))
	task.Timeout = 90 * time.Second
	// The fake clock is in the future, so the real timer gets its 90 s.
	res := e.Execute(context.Background(), task)
	want := now.Add(90 * time.Second).Format(time.RFC3339Nano)
	if have := envOf(res.Stdout)[EnvDeadline]; have != want {
		t.Errorf("%s: want %q, have %q", EnvDeadline, want, have)
	}
	if !res.Started.Equal(now) {
		t.Errorf("started: want %s, have %s", now, res.Started)
	}
}

// fixedClock is a drover.Clock that never moves.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

func TestExecStdinIsTheEnvelopeByteForByte(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{OutputLimit: 1 << 20})
	// A shell would create pwned; the path is private to this test, so a
	// concurrent run (or a stale file) cannot decide the verdict.
	pwned := filepath.Join(t.TempDir(), "pwned")
	nasty := "$(rm -rf /tmp/x) `touch " + pwned + "` ' \" \\ ; | & > < * ? ~ #!\n\t\r\x01\x7f\xc3\xa9 ${HOME} %s %n"
	for _, size := range []int{0, 8 << 10, 300 << 10} { // prefilled and written by a goroutine
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			t.Parallel()
			task := testTask(t, "job", command("cat"))
			envelope := []byte(`{"id":"x","task":"job","args":` + strconv.Quote(nasty) + `,"pad":"` +
				strings.Repeat("ab", size/2) + `","tail":"` + nasty + `"}`)
			envelope = append(envelope, []byte("\x00\xff\xfe raw bytes after the object")...)
			task.Envelope = envelope
			res := e.Execute(context.Background(), task)
			if res.Outcome != OutcomeSuccess {
				t.Fatalf("outcome: want success, have %s (%s)", res.Outcome, res.Reason)
			}
			if !bytes.Equal(res.Stdout, envelope) {
				t.Errorf("stdout differs from the envelope: want %d bytes, have %d", len(envelope), len(res.Stdout))
			}
		})
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("%s exists: the payload was interpreted by a shell", pwned)
	}
}

func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		trap   string
		forced bool
	}{
		{"task obeys SIGTERM", "", false},
		{"task ignores SIGTERM", "trap '' TERM", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "grandchild.pid")
			// The grandchild ignores SIGTERM too: only the group SIGKILL
			// after the leader is gone can end it in the first case.
			script := tt.trap + "\n(trap '' TERM; exec sleep 1000) &\necho $! > " + pidFile + "\nwhile :; do sleep 1; done\n"
			e := newTestExecutor(t, Config{KillGrace: 300 * time.Millisecond})
			task := testTask(t, "job", command(writeScript(t, script)))
			// 3 s: the shell must set its trap and write the grandchild's
			// pid before the timeout's SIGTERM, else the first case has no
			// pid file and the second dies by SIGTERM; a fork from a -race
			// binary on a loaded 2-core machine can take a good part of 1 s.
			task.Timeout = 3 * time.Second
			res := e.Execute(context.Background(), task)
			if res.Outcome != OutcomeTimeout {
				t.Fatalf("outcome: want timeout, have %s (%s)", res.Outcome, res.Reason)
			}
			if res.ExitCode != -1 || res.Signal == 0 {
				t.Errorf("want a kill by signal, have exit %d signal %v", res.ExitCode, res.Signal)
			}
			want := " (timeout 3s): sent SIGTERM to its process group"
			if tt.forced {
				want += ", then SIGKILL after 300ms"
			}
			if !strings.HasPrefix(res.Reason, "timed out at ") || !strings.HasSuffix(res.Reason, want) {
				t.Errorf("reason: want timed out at <deadline>%s, have %q", want, res.Reason)
			}
			if tt.forced && res.Signal != syscall.SIGKILL {
				t.Errorf("signal: want SIGKILL, have %v", res.Signal)
			}
			assertGone(t, res.PID, "task leader")
			assertGone(t, readPID(t, pidFile), "grandchild")
		})
	}
}

func TestExecKillsLeftoversAfterSuccess(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "bg.pid")
	script := "sleep 1000 >/dev/null 2>&1 &\necho $! > " + pidFile + "\nexit 0\n"
	e := newTestExecutor(t, Config{})
	res := e.Execute(context.Background(), testTask(t, "job", command(writeScript(t, script))))
	if res.Outcome != OutcomeSuccess {
		t.Fatalf("outcome: want success, have %s (%s)", res.Outcome, res.Reason)
	}
	assertGone(t, readPID(t, pidFile), "background process left by the task")
}

func TestExecAbortKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild.pid")
	script := "trap '' TERM\nsleep 1000 &\necho $! > " + pidFile + ".tmp\nmv " + pidFile + ".tmp " + pidFile + "\nwait\n"
	e := newTestExecutor(t, Config{})
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan Result, 1)
	go func() { done <- e.Execute(ctx, testTask(t, "job", command(writeScript(t, script)))) }()
	waitForFile(t, pidFile, done) // abort once the grandchild runs
	cancel(errors.New("session lost"))
	res := <-done
	if res.Outcome != OutcomeAborted {
		t.Fatalf("outcome: want aborted, have %s (%s)", res.Outcome, res.Reason)
	}
	if res.Signal != syscall.SIGKILL || !strings.Contains(res.Reason, "session lost") {
		t.Errorf("want SIGKILL and the cause in the reason, have %v, %q", res.Signal, res.Reason)
	}
	assertGone(t, res.PID, "task leader")
	assertGone(t, readPID(t, pidFile), "grandchild")
}

func TestExecAbortedBeforeStart(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := e.Execute(ctx, testTask(t, "job", command("true")))
	if res.Outcome != OutcomeAborted || res.PID != 0 || res.ExitCode != -1 {
		t.Errorf("want aborted, never started, have %s pid %d exit %d", res.Outcome, res.PID, res.ExitCode)
	}
}

func TestExecDeadlinePassedBeforeStart(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	task := testTask(t, "job", command("true"))
	task.Deadline = time.Now().Add(-time.Second)
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeTimeout || res.PID != 0 {
		t.Errorf("want a timeout without a start, have %s pid %d", res.Outcome, res.PID)
	}
}

func TestExecStartFailures(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	notExecutable := filepath.Join(t.TempDir(), "data.txt")
	if err := os.WriteFile(notExecutable, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, argv0 := range []string{"no-such-command-drover", "/no/such/path", notExecutable} {
		res := e.Execute(context.Background(), testTask(t, "job", command(argv0)))
		if res.Outcome != OutcomeFailure || res.ExitCode != -1 || res.PID != 0 || !strings.Contains(res.Reason, argv0) {
			t.Errorf("%s: want a failure before start naming the command, have %s exit %d pid %d (%s)",
				argv0, res.Outcome, res.ExitCode, res.PID, res.Reason)
		}
	}
}

func TestExecWorkingDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newTestExecutor(t, Config{})
	res := e.Execute(context.Background(), testTask(t, "job", drover.TaskRoute{Command: []string{"pwd"}, Dir: dir}))
	if have := strings.TrimSpace(string(res.Stdout)); have != dir {
		t.Errorf("pwd: want %s, have %s", dir, have)
	}
}

func TestExecOutputKeepsTheTail(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{OutputLimit: 1000})
	// 20000 numbered lines to stderr; only the last 1000 bytes survive.
	script := "i=0; while [ $i -lt 20000 ]; do echo \"line $i\" >&2; i=$((i+1)); done; exit 4"
	res := e.Execute(context.Background(), testTask(t, "job", command(writeScript(t, script))))
	if len(res.Stderr) != 1000 {
		t.Fatalf("stderr: want 1000 bytes, have %d", len(res.Stderr))
	}
	if !bytes.HasSuffix(res.Stderr, []byte("line 19998\nline 19999\n")) {
		t.Errorf("stderr does not end with the last lines: %q", res.Stderr[len(res.Stderr)-40:])
	}
	if !strings.HasSuffix(res.Reason, "line 19999") {
		t.Errorf("reason: want the last line, have %q", res.Reason)
	}
}

func TestExecLogsOutputWithTaskFields(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer // hclog writes in Execute's goroutine
	logger := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Debug, JSONFormat: true})
	e := newTestExecutor(t, Config{Logger: logger})
	task := testTask(t, "resize", command(writeScript(t, "echo 'cannot open image' >&2; exit 1")))
	res := e.Execute(context.Background(), task)
	out := buf.String()
	for _, want := range []string{
		`"queue":"emails"`, `"task":"resize"`, `"id":"` + task.Message.ID + `"`, `"attempt":2`,
		`"pid":` + strconv.Itoa(res.PID), `cannot open image`, `"@level":"warn"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log: want %s in\n%s", want, out)
		}
	}
}

func TestExecRunsAsUser(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Fatalf("this test runs as root (to switch users); have uid %d", os.Getuid())
	}
	e := newTestExecutor(t, Config{})
	tests := []struct {
		name, user, group string
		limits            drover.Limits
		uid, gid          string
	}{
		{"user by name", "nobody", "", drover.Limits{}, "65534", "65534"},
		{"user by id, group by name", "65534", "daemon", drover.Limits{}, "65534", "1"},
		{"user through the rlimit trampoline", "nobody", "", drover.Limits{OpenFiles: 64}, "65534", "65534"},
		{"group only", "", "daemon", drover.Limits{}, "0", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := testTask(t, "whoami", command("/bin/sh", "-c", "id -u; id -g; id -G"))
			task.User, task.Group, task.Limits = tt.user, tt.group, tt.limits
			res := e.Execute(context.Background(), task)
			if res.Outcome != OutcomeSuccess {
				t.Fatalf("outcome: want success, have %s (%s) stderr %q", res.Outcome, res.Reason, res.Stderr)
			}
			lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
			if len(lines) != 3 || lines[0] != tt.uid || lines[1] != tt.gid {
				t.Fatalf("id -u, -g: want %s, %s, have %q", tt.uid, tt.gid, res.Stdout)
			}
			if tt.user == "" {
				return
			}
			for _, g := range strings.Fields(lines[2]) {
				if g == "0" {
					t.Errorf("groups %q: want root's group dropped", lines[2])
				}
			}
		})
	}
}

func TestExecUnknownUserFailsBeforeStart(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{})
	task := testTask(t, "job", command("true"))
	task.User = "no-such-user-drover"
	res := e.Execute(context.Background(), task)
	if res.Outcome != OutcomeFailure || res.PID != 0 || !strings.Contains(res.Reason, "no-such-user-drover") {
		t.Errorf("want a failure before start naming the user, have %s pid %d (%s)", res.Outcome, res.PID, res.Reason)
	}
}

func TestClassifyExit(t *testing.T) {
	t.Parallel()
	exited := func(code int) syscall.WaitStatus { return syscall.WaitStatus(code << 8) }
	killed := func(sig syscall.Signal) syscall.WaitStatus { return syscall.WaitStatus(sig) }
	stderr := []byte("warming up\nlast words\n")
	tests := []struct {
		ws      syscall.WaitStatus
		goChild bool
		outcome Outcome
		code    int
		signal  syscall.Signal
		reason  string
	}{
		{exited(0), false, OutcomeSuccess, 0, 0, "exit status 0"},
		{exited(75), false, OutcomeRetry, 75, 0, "exit status 75 (EX_TEMPFAIL): retry requested: last words"},
		{exited(3), false, OutcomeFailure, 3, 0, "exit status 3: last words"},
		{exited(124), false, OutcomeFailure, 124, 0, "exit status 124: last words"},
		{exited(124), true, OutcomeTimeout, 124, 0, "handler failed after its deadline: last words"},
		{exited(1), true, OutcomeFailure, 1, 0, "exit status 1: last words"},
		{killed(syscall.SIGKILL), false, OutcomeFailure, -1, syscall.SIGKILL, "killed by signal 9 (killed): last words"},
		{killed(syscall.SIGXCPU), false, OutcomeFailure, -1, syscall.SIGXCPU, "killed by signal 24 (CPU time limit exceeded): last words"},
	}
	for _, tt := range tests {
		outcome, code, sig, reason := classifyExit(tt.ws, tt.goChild, stderr)
		if outcome != tt.outcome || code != tt.code || sig != tt.signal || reason != tt.reason {
			t.Errorf("status %#x go=%v: want %s %d %v %q, have %s %d %v %q",
				int(tt.ws), tt.goChild, tt.outcome, tt.code, tt.signal, tt.reason, outcome, code, sig, reason)
		}
	}
}
