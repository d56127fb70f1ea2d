package executor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/drover-dev/drover"
	"github.com/hashicorp/go-hclog"
)

// How tasks run (the executor's decisions where DESIGN.md §6 is silent):
//
//   - A "command" runs as a child process: argv never through a shell, the
//     envelope byte for byte on stdin, its own process group, SIGKILL when
//     the worker dies (the direct child; its descendants are reparented).
//   - Environment: Config.Env (default the worker's) without DROVER_*,
//     then HOME/USER/LOGNAME of the run-as user, then the route's env, then
//     DROVER_QUEUE, _TASK, _MESSAGE_ID, _ATTEMPT, _POSITION, _DEADLINE. A
//     route may not set DROVER_* (the attempt fails, saying so).
//   - At the deadline the group gets SIGTERM, and SIGKILL after KillGrace.
//     When the leader exits for any reason, whatever is left in its group
//     gets SIGKILL: a task may not leave processes behind.
//   - Under a Lease (Config.Lease), the group is also killed — SIGTERM,
//     then SIGKILL after the lease's grace — by a supervisor process when
//     the worker stops renewing the lease for longer than its bound (the
//     worker is frozen): no task outlives its worker's claim on the queue.
//   - Resource limits go through a re-exec of the worker binary that calls
//     setrlimit and then execs the program (child_exec.go); without limits
//     the program is started directly.
//   - A "go" route re-executes the worker binary, which runs the handler
//     (child_go.go); its exit codes are those of a command, plus 124 for an
//     error after the deadline (a timeout) and 126 for a child that could
//     not start the handler.
//   - An "inline" route calls the handler in the worker process.

// Task is one attempt at running a message, as handed to an Executor.
type Task struct {
	// Message is the decoded envelope. Its Queue, Task, ID, Attempt and
	// Position fill the DROVER_* environment of a subprocess.
	Message *drover.Message
	// Envelope is the raw envelope, written byte for byte to the task's
	// stdin. When empty, Message is marshalled instead.
	Envelope []byte
	// Queue is the queue the message was read from; empty means
	// Message.Queue.
	Queue string
	// Route says how the task runs (command, inline or go).
	Route drover.TaskRoute
	// Timeout is the queue's per-attempt timeout. It sets Deadline when
	// Deadline is zero; when both are zero the task has no time limit.
	Timeout time.Duration
	// Deadline is the moment the attempt times out. Zero: the executor's
	// clock at the start of Execute plus Timeout.
	Deadline time.Time
	// Limits bound a subprocess's resources (ignored for inline routes);
	// negative values fail the attempt before it starts. Setting any of
	// them costs a re-exec of the worker binary per attempt (see
	// child_exec.go). AddressSpace suits programs in C, Python and the
	// like; the Go runtime reserves address space erratically and may not
	// even start under 1–2 GB, so bound Go programs (and "go" routes) with
	// a cgroup instead.
	Limits drover.Limits
	// User and Group, when set, are the user and group a subprocess runs as
	// (names or numeric ids; ignored for inline routes).
	User, Group string
	// PoolSize is the most children a pooled route's pool keeps: the
	// worker's slots (its capacity), since one pool serves every queue of
	// the route; 0 means no bound. A task that finds the pool full waits
	// for a child, first come first served, and its Timeout starts when
	// the child gets it. Ignored unless Route.Pool is set.
	PoolSize int
	// OnStart, when set, is called with the process id as soon as the
	// subprocess has started, before Execute waits for it (not for inline
	// routes): the worker shows it in /debug/state while the task runs.
	// It must not block.
	OnStart func(pid int)
	// Cancel, when set, is closed when an operator cancels the attempt
	// (docs/semantics.md, "Cancelling a running task"): the task's process
	// group gets SIGTERM, then SIGKILL after KillGrace, as at a timeout,
	// and the Outcome is OutcomeCancelled. A pooled task's child goes with
	// it (the pool starts another). Inline handlers ignore it: they cannot
	// be killed, and the worker refuses to cancel them.
	Cancel <-chan struct{}
}

// queue returns the queue the task belongs to.
func (t *Task) queue() string {
	if t.Queue != "" {
		return t.Queue
	}
	return t.Message.Queue
}

// Outcome is how an attempt ended. Its values are also the names of the
// task outcome metrics.
type Outcome string

// The outcomes of an attempt.
const (
	// OutcomeSuccess: exit 0, or a Go handler returned nil.
	OutcomeSuccess Outcome = "success"
	// OutcomeRetry: exit 75 (EX_TEMPFAIL), or a Go handler returned an
	// error wrapping drover.ErrRetry. Retry with backoff.
	OutcomeRetry Outcome = "retry"
	// OutcomeFailure: any other exit code, death by a signal the executor
	// did not send, a handler error or panic, or a task that could not be
	// started. Retried with backoff until max_attempts, then dead-lettered.
	OutcomeFailure Outcome = "failure"
	// OutcomeTimeout: the attempt ran past its deadline and was stopped.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeCancelled: an operator cancelled the attempt (Task.Cancel)
	// and the task was stopped. The worker retries or dead-letters the
	// message as the operator chose.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeAborted: Execute's context was cancelled (session lost,
	// shutdown past the drain) and the task was killed. The attempt does
	// not count: the message is neither completed nor failed, and runs
	// again under whichever worker owns the queue next.
	OutcomeAborted Outcome = "aborted"
)

// Result is what an Executor reports about one attempt.
type Result struct {
	Outcome Outcome
	// ExitCode is the process's exit code; -1 when it was killed by a
	// signal or never ran. Go handlers report 0 (nil), 75 (ErrRetry),
	// 1 (error) and 2 (panic), as their re-executed child would exit.
	ExitCode int
	// Signal is the signal that ended the process, 0 if none.
	Signal syscall.Signal
	// Stdout and Stderr are the last bytes (at most Config.OutputLimit)
	// the task wrote. For inline handlers Stderr holds the error or panic.
	Stdout, Stderr []byte
	// PID is the process id; 0 for inline handlers and tasks never started.
	PID int
	// Started is when the attempt started, by the executor's clock.
	Started time.Time
	// Duration is how long the attempt ran.
	Duration time.Duration
	// Reason says, for people, why the attempt ended as it did.
	Reason string
}

// Failure returns the dead-letter record for the result.
func (r Result) Failure(at time.Time) drover.Failure {
	return drover.Failure{
		Reason:     r.Reason,
		ExitCode:   r.ExitCode,
		StderrTail: string(r.Stderr),
		FailedAt:   at,
	}
}

// Executor runs task attempts. Implementations are safe for concurrent use.
//
// The subprocess executors (New) are Linux-only: they rely on
// process groups, the parent-death signal and /proc/self/exe.
type Executor interface {
	// Execute runs one attempt and blocks until it has ended and every
	// process it started is gone (or, for an inline handler, until the
	// handler returns). Cancelling ctx means "abort now": the task's whole
	// process group is killed at once and the Outcome is OutcomeAborted.
	// Inline handlers cannot be killed; they see ctx cancelled and Execute
	// waits for them to return.
	Execute(ctx context.Context, t *Task) Result
}

// Defaults of Config.
const (
	DefaultKillGrace   = 5 * time.Second
	DefaultOutputLimit = 64 << 10
	// DefaultSelf is the worker's own binary as the kernel knows it: it
	// stays valid when the file is replaced during a deploy, so a child is
	// always the same build (with the same registered handlers) as the
	// worker that started it.
	DefaultSelf = "/proc/self/exe"
)

// Config configures New. The zero value of every field means its
// documented default.
type Config struct {
	// Logger receives task output (stdout and stderr tails, at Debug for
	// successes and Warn otherwise) and kill notices, with the task's
	// queue, task, id, attempt and pid. Default: a null logger.
	Logger hclog.Logger
	// Clock gives Started, Duration and default deadlines. Default:
	// drover.SystemClock. Kill timers always run on real time.
	Clock drover.Clock
	// KillGrace is how long a timed-out task has between SIGTERM and
	// SIGKILL to its process group. Default 5s.
	KillGrace time.Duration
	// OutputLimit is how many bytes of each of stdout and stderr are kept
	// (the tail). Default 64 KiB.
	OutputLimit int
	// Env is the environment every subprocess starts from, as KEY=VALUE
	// entries; nil means the worker's own environment at New.
	// Variables named DROVER_* are always removed: the executor sets that
	// namespace itself, and the worker's own settings (which may hold
	// credentials) are not the task's business.
	Env []string
	// Self is the worker binary, re-executed for "go" routes and to apply
	// resource limits. Default: DefaultSelf.
	Self string
	// Lease, when set, guards every subprocess: its process group is
	// tracked from its start until it is reaped, and killed by the lease's
	// supervisor when the worker stops renewing (see Lease). A task whose
	// group cannot be tracked (the supervisor is gone) is killed and fails.
	// Inline handlers run in the worker and need none. Default: none.
	Lease *Lease
}

// withDefaults validates c and returns it with defaults filled in. Errors
// wrap drover.ErrInvalidConfig and name the field.
func (c Config) withDefaults() (Config, error) {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: executor: %s: %s", drover.ErrInvalidConfig, field, fmt.Sprintf(format, a...))
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Clock == nil {
		c.Clock = drover.SystemClock{}
	}
	switch {
	case c.KillGrace < 0:
		return c, bad("KillGrace", "must be ≥ 0, have %s", c.KillGrace)
	case c.KillGrace == 0:
		c.KillGrace = DefaultKillGrace
	}
	switch {
	case c.OutputLimit < 0:
		return c, bad("OutputLimit", "must be ≥ 0, have %d", c.OutputLimit)
	case c.OutputLimit == 0:
		c.OutputLimit = DefaultOutputLimit
	}
	if c.Env == nil {
		c.Env = os.Environ()
	}
	for i, kv := range c.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsRune(kv, 0) {
			return c, bad(fmt.Sprintf("Env[%d]", i), "want KEY=VALUE without NUL, have %q", kv)
		}
	}
	c.Env = baseEnv(c.Env)
	if c.Self == "" {
		c.Self = DefaultSelf
	}
	if fi, err := os.Stat(c.Self); err != nil {
		return c, bad("Self", "%v", err)
	} else if !fi.Mode().IsRegular() {
		return c, bad("Self", "%s is not a regular file", c.Self)
	}
	return c, nil
}

// New returns the Executor that runs each task the way its route
// says: a "command" as a subprocess, a "go" handler in a re-executed child of
// the worker binary (whose main must call RunChildIfRequested first), an
// "inline" handler in process. It fails, naming the field, when cfg is
// invalid.
func New(cfg Config) (Executor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ex := newExecExecutor(cfg)
	ex.pools = newPools(ex)
	return &routeExecutor{
		exec:   ex,
		inline: &inlineExecutor{clock: cfg.Clock, logger: cfg.Logger},
	}, nil
}

// routeExecutor dispatches by route. It implements PoolOwner.
type routeExecutor struct {
	exec   *execExecutor
	inline *inlineExecutor
}

// PoolOwner is implemented by the Executor that New returns: the worker
// stops a queue's pooled children when it pauses or gives up the queue,
// shows the pools in its state, and closes the executor when it stops
// (docs/process-pool.md).
type PoolOwner interface {
	// ReleaseQueue says that queue no longer uses its pools (it was
	// paused or stopped). A pool that no queue uses any more is stopped:
	// idle children now, busy ones when their task ends. It does not
	// block.
	ReleaseQueue(queue string)
	// PoolStates describes every pool, reading each child's RSS.
	PoolStates() []PoolState
	// Close stops every pooled child and waits until they are gone;
	// pooled tasks started later are aborted. Per-task routes still run.
	Close()
}

// ReleaseQueue implements PoolOwner.
func (e *routeExecutor) ReleaseQueue(queue string) { e.exec.pools.releaseQueue(queue) }

// PoolStates implements PoolOwner.
func (e *routeExecutor) PoolStates() []PoolState { return e.exec.pools.states() }

// Close implements PoolOwner.
func (e *routeExecutor) Close() { e.exec.pools.close() }

// Execute implements Executor.
func (e *routeExecutor) Execute(ctx context.Context, t *Task) Result {
	if t.Message == nil {
		return neverRan(e.exec.clock.Now(), "task has no message")
	}
	r := t.Route
	switch {
	case r.Inline && !r.Go && len(r.Command) == 0:
		return e.inline.Execute(ctx, t)
	case r.Pool != nil && !r.Inline && (r.Go != (len(r.Command) > 0)):
		return e.exec.executePooled(ctx, t)
	case r.Go && !r.Inline && len(r.Command) == 0:
		return e.exec.executeGo(ctx, t)
	case len(r.Command) > 0 && !r.Inline && !r.Go:
		return e.exec.Execute(ctx, t)
	}
	return neverRan(e.exec.clock.Now(), fmt.Sprintf("route of task %q must set exactly one of command, inline or go", t.Message.Task))
}

// neverRan is the failure of a task that could not be started.
func neverRan(now time.Time, reason string) Result {
	return Result{Outcome: OutcomeFailure, ExitCode: -1, Started: now, Reason: reason}
}

// cancelledBeforeStart reports whether t was cancelled before its process
// (or its pooled child's task) started.
func cancelledBeforeStart(t *Task) bool {
	select {
	case <-t.Cancel:
		return true
	default:
		return false
	}
}

// neverRanCancelled is the result of a task cancelled before it started.
func neverRanCancelled(now time.Time) Result {
	r := neverRan(now, "cancelled: before the task started")
	r.Outcome = OutcomeCancelled
	return r
}

// taskLogger returns logger with the task's fields.
func taskLogger(logger hclog.Logger, t *Task, pid int) hclog.Logger {
	return logger.With("queue", t.queue(), "task", t.Message.Task, "id", t.Message.ID,
		"attempt", t.Message.Attempt, "pid", pid)
}
