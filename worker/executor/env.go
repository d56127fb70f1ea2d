package executor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/tracing"
)

// The environment variables the executor sets for every subprocess.
const (
	EnvQueue     = "DROVER_QUEUE"      // the queue's name
	EnvTask      = "DROVER_TASK"       // the task name
	EnvMessageID = "DROVER_MESSAGE_ID" // the message id
	EnvAttempt   = "DROVER_ATTEMPT"    // 0 on the first run
	EnvPosition  = "DROVER_POSITION"   // the message's position (µs)
	EnvDeadline  = "DROVER_DEADLINE"   // RFC 3339 with nanoseconds; absent when the task has no time limit
)

// reservedEnvPrefix is the namespace the executor owns in a task's
// environment.
const reservedEnvPrefix = "DROVER_"

// baseEnv returns env without DROVER_* variables, without the worker's own
// TRACEPARENT and TRACESTATE (a task gets its own span's, or none), and
// without duplicate keys (the last one wins, as in os/exec).
func baseEnv(env []string) []string {
	seen := make(map[string]int, len(env))
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, reservedEnvPrefix) || k == tracing.EnvTraceparent || k == tracing.EnvTracestate {
			continue
		}
		if i, dup := seen[k]; dup {
			out[i] = kv
			continue
		}
		seen[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// taskEnv builds a subprocess's environment: base, then the identity's
// HOME/USER/LOGNAME, then the route's Env, then the DROVER_* variables; a
// later entry replaces an earlier one with the same key. A route that sets a
// DROVER_* variable is refused: that namespace is the executor's.
func taskEnv(base []string, id *identity, t *Task, deadline time.Time) ([]string, error) {
	routeEnv := t.Route.Env
	for k := range routeEnv {
		if strings.HasPrefix(k, reservedEnvPrefix) {
			return nil, fmt.Errorf("route env sets %s: the DROVER_* namespace is reserved for the executor", k)
		}
	}
	env := make([]string, 0, len(base)+len(routeEnv)+9)
	if len(routeEnv) == 0 && id == nil {
		env = append(env, base...)
	} else {
		for _, kv := range base {
			k, _, _ := strings.Cut(kv, "=")
			if _, over := routeEnv[k]; over || (id != nil && id.setsEnv(k)) {
				continue
			}
			env = append(env, kv)
		}
	}
	if id != nil {
		for _, kv := range id.env {
			k, _, _ := strings.Cut(kv, "=")
			if _, over := routeEnv[k]; !over {
				env = append(env, kv)
			}
		}
	}
	if len(routeEnv) > 0 {
		keys := make([]string, 0, len(routeEnv))
		for k := range routeEnv {
			keys = append(keys, k)
		}
		slices.Sort(keys) // a stable order makes a task's environment reproducible
		for _, k := range keys {
			env = append(env, k+"="+routeEnv[k])
		}
	}
	m := t.Message
	env = append(env,
		EnvQueue+"="+t.queue(),
		EnvTask+"="+m.Task,
		EnvMessageID+"="+m.ID,
		EnvAttempt+"="+strconv.Itoa(m.Attempt),
		EnvPosition+"="+strconv.FormatInt(int64(m.Position), 10),
	)
	if !deadline.IsZero() {
		env = append(env, EnvDeadline+"="+deadline.UTC().Format(time.RFC3339Nano))
	}
	return env, nil
}

// poolEnv is a pooled child's environment: a task's, without DROVER_*
// (they change from task to task and come in each task frame; a child
// serves every queue of its route, so not even DROVER_QUEUE is fixed), with
// DROVER_POOL_PROTOCOL.
func poolEnv(base []string, id *identity, t *Task) ([]string, error) {
	env, err := taskEnv(base, id, &Task{Message: &drover.Message{}, Queue: t.Queue, Route: t.Route}, time.Time{})
	if err != nil {
		return nil, err
	}
	out := env[:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, reservedEnvPrefix) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, fmt.Sprintf("%s=%d", EnvPoolProtocol, poolProtocol)), nil
}

// deadlineOf returns the task's deadline: Deadline, else now + Timeout,
// else zero (no limit).
func deadlineOf(t *Task, now time.Time) time.Time {
	switch {
	case !t.Deadline.IsZero():
		return t.Deadline
	case t.Timeout > 0:
		return now.Add(t.Timeout)
	}
	return time.Time{}
}

// limitsSet reports whether any resource limit is set.
func limitsSet(l drover.Limits) bool {
	return l.AddressSpace > 0 || l.CPUSeconds > 0 || l.OpenFiles > 0
}

// checkLimits refuses negative limits, naming the config field.
func checkLimits(l drover.Limits) error {
	for _, f := range []struct {
		name  string
		value int64
	}{{"address_space", l.AddressSpace}, {"cpu_seconds", l.CPUSeconds}, {"open_files", l.OpenFiles}} {
		if f.value < 0 {
			return fmt.Errorf("limits.%s must be ≥ 0, have %d", f.name, f.value)
		}
	}
	return nil
}
