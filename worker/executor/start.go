package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/drover-dev/drover"
)

// What every task's start needs, whether it runs as a process of its own
// (exec.go) or on a pooled child (pool_exec.go): its command, who it runs
// as, the rlimit trampoline, its envelope, and the checks that it may still
// start.

// procSpec is the process a task runs as, before the trampoline.
type procSpec struct {
	path      string
	argv      []string
	childMode string // "" for a command, childModeGo or childModeGoPool for a Go handler
}

// commandPath finds a route's command as os/exec does: a name without a
// slash in the worker's PATH; one with a slash is left to the kernel,
// relative to the route's Dir.
func commandPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("find command %q: %w", name, err)
	}
	return path, nil
}

// runAs returns who t's process runs as: nil for the worker's own user and
// group.
func (e *execExecutor) runAs(t *Task) (*identity, error) {
	id, err := e.ids.lookup(t.User, t.Group)
	if err != nil {
		return nil, fmt.Errorf("run as user %q group %q: %w", t.User, t.Group, err)
	}
	return id, nil
}

// commandLine returns what to fork for spec, under limits, with env: spec
// itself, or the rlimit trampoline that execs it. Go cannot set a child's
// rlimits between fork and exec, and prlimit after the start races with the
// child; so the worker binary sets them on itself and then execs the real
// program. A re-executed worker binary finds its mode in env.
func (e *execExecutor) commandLine(spec procSpec, limits drover.Limits, env []string) (string, []string, []string) {
	if limitsSet(limits) {
		argv := trampolineArgs(e.selfName, limits, spec.childMode, spec.path, spec.argv)
		return e.self, argv, append(env, childEnv+"="+childModeExec)
	}
	if spec.childMode != "" {
		env = append(env, childEnv+"="+spec.childMode)
	}
	return spec.path, spec.argv, env
}

// envelopeOf returns t's envelope, encoding its message when the queue
// loop gave none.
func envelopeOf(t *Task) ([]byte, error) {
	if len(t.Envelope) > 0 {
		return t.Envelope, nil
	}
	envelope, err := json.Marshal(t.Message)
	if err != nil {
		return nil, fmt.Errorf("encode envelope: %w", err)
	}
	return envelope, nil
}

// tooLateToStart returns the result of a task that must not start at
// start: ctx has ended (aborted) or the deadline has passed (timed out).
// It returns false when the task may start.
func tooLateToStart(ctx context.Context, start, deadline time.Time) (Result, bool) {
	if err := context.Cause(ctx); err != nil {
		r := neverRan(start, "aborted before start: "+err.Error())
		r.Outcome = OutcomeAborted
		return r, true
	}
	if !deadline.IsZero() && !deadline.After(start) {
		r := neverRan(start, "deadline passed before the task started")
		r.Outcome = OutcomeTimeout
		return r, true
	}
	return Result{}, false
}
