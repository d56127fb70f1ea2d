package drover

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("30s", "5m"). A JSON number is read as nanoseconds.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "30s" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: want a string like \"30s\", have %s", b)
	}
	*d = Duration(n)
	return nil
}

// Std returns the time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Bounds of RateLimit.
const (
	MaxRatePerSecond = 1_000_000
	MaxRateBurst     = 1_000_000
)

// Queue configuration defaults, used where a field is zero.
const (
	DefaultWeight      = 1
	DefaultConcurrency = 4
	DefaultTimeout     = 5 * time.Minute
	DefaultMaxAttempts = 5
	DefaultBackoffBase = time.Second
	DefaultBackoffMax  = 10 * time.Minute
)

// QueueConfig is a queue's configuration, stored in /queues/<bucket>/<name>. The zero
// value of every field means the documented default.
type QueueConfig struct {
	Name        string   `json:"name"`
	Weight      int      `json:"weight,omitempty"`       // balancing weight; default 1
	Concurrency int      `json:"concurrency,omitempty"`  // tasks at once; default 4 (1 when Ordered)
	Ordered     bool     `json:"ordered,omitempty"`      // strict FIFO: one at a time, retries block
	Timeout     Duration `json:"timeout,omitempty"`      // per attempt; default 5m
	MaxAttempts int      `json:"max_attempts,omitempty"` // runs before dead-lettering; default 5
	Backoff     Backoff  `json:"backoff,omitempty"`
	Retention   Duration `json:"retention,omitempty"` // keep done messages this long for replay; 0: trim at once
	Tags        []string `json:"tags,omitempty"`      // only members with all these tags may own it
	// Tasks routes task names to how they run. The key "*" matches any task
	// without a route of its own.
	Tasks  map[string]TaskRoute `json:"tasks,omitempty"`
	Limits Limits               `json:"limits,omitempty"`
	User   string               `json:"user,omitempty"`  // run subprocesses as this user
	Group  string               `json:"group,omitempty"` // and group
	// Outcomes keeps records of finished jobs for status lookups; default
	// 24h, at most 10000 records, no stdout.
	Outcomes Outcomes `json:"outcomes,omitzero"`
	// RateLimit caps how many messages start per second, enforced by the
	// queue's owner (docs/one-queue-per-key.md, "Rate limits"). The zero
	// value means no limit.
	RateLimit RateLimit `json:"rate_limit,omitzero"`
	// OnFailure says what an ordered queue does with a head message that
	// has used its attempts: OnFailureDeadLetter (the default) moves it to
	// the dead letters and goes on; OnFailurePark pauses the queue with
	// the message as the reason, so nothing behind it runs until an
	// operator retries it, edits it or moves it to the dead letters
	// (docs/one-queue-per-key.md, "Parking a queue").
	OnFailure string `json:"on_failure,omitempty"`
	// Family names the queue family this queue was registered from (set
	// by the rebalance leader when the queue's first enqueue matched the
	// family; docs/one-queue-per-key.md). Empty for a queue configured on
	// its own.
	Family string `json:"family,omitempty"`
}

// RateLimit is a token bucket: PerSecond tokens a second, up to Burst kept
// (default: a hundredth of a second's tokens, at least 1, so that a limited
// queue wakes at most about 100 times a second). Each message start takes a
// token; a retry in place of an ordered queue takes none.
type RateLimit struct {
	PerSecond float64 `json:"per_second,omitempty"`
	Burst     int     `json:"burst,omitempty"`
}

// Enabled reports whether the queue is limited.
func (r RateLimit) Enabled() bool { return r.PerSecond > 0 }

// BurstOrDefault is Burst, or its default when zero.
func (r RateLimit) BurstOrDefault() int {
	if r.Burst > 0 {
		return r.Burst
	}
	return max(1, int(math.Ceil(r.PerSecond/100)))
}

// The choices of QueueConfig.OnFailure.
const (
	OnFailureDeadLetter = "dead_letter"
	OnFailurePark       = "park"
)

// Parks reports whether the queue parks at a failed head (ordered queues
// with on_failure park).
func (c QueueConfig) Parks() bool { return c.Ordered && c.OnFailure == OnFailurePark }

// Backoff is the retry delay: Base × 2^(attempt-1), capped at Max, with up to
// Jitter (a fraction, 0–1) of random spread.
type Backoff struct {
	Base   Duration `json:"base,omitempty"`
	Max    Duration `json:"max,omitempty"`
	Jitter float64  `json:"jitter,omitempty"`
}

// Delay returns the backoff before retry number attempt (1 for the first
// retry), without jitter; callers add jitter with their own random source.
func (b Backoff) Delay(attempt int) time.Duration {
	base, max := b.Base.Std(), b.Max.Std()
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if max <= 0 {
		max = DefaultBackoffMax
	}
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

// TaskRoute says how one task runs. Exactly one of Command, Inline and Go is
// set.
type TaskRoute struct {
	Command []string          `json:"command,omitempty"` // argv of a subprocess; never through a shell
	Inline  bool              `json:"inline,omitempty"`  // a registered Go handler, run in the worker process
	Go      bool              `json:"go,omitempty"`      // a registered Go handler, run in a re-executed child
	Env     map[string]string `json:"env,omitempty"`     // extra environment for subprocesses
	Dir     string            `json:"dir,omitempty"`     // working directory for subprocesses
	// Pool, when set, runs the route's tasks in warm child processes that
	// serve many tasks each (docs/process-pool.md); nil means a process per
	// task. Only command and go routes can be pooled.
	Pool *PoolConfig `json:"pool,omitempty"`
}

// PoolConfig is a pooled route's recycling policy. Zero fields mean "no
// limit": a child then serves tasks until it dies, the pool is stopped or
// its idle timeout passes.
type PoolConfig struct {
	// MaxTasksPerChild replaces a child after it has served this many tasks.
	MaxTasksPerChild int `json:"max_tasks_per_child,omitempty"`
	// MaxMemoryPerChild replaces a child whose resident set size is at or
	// above this after a task.
	MaxMemoryPerChild ByteSize `json:"max_memory_per_child,omitempty"`
	// MaxChildAge replaces a child older than this before its next task.
	MaxChildAge Duration `json:"max_child_age,omitempty"`
}

// Limits bound a subprocess's resources (setrlimit). Zero means unlimited.
type Limits struct {
	AddressSpace int64 `json:"address_space,omitempty"` // bytes (RLIMIT_AS)
	CPUSeconds   int64 `json:"cpu_seconds,omitempty"`   // RLIMIT_CPU
	OpenFiles    int64 `json:"open_files,omitempty"`    // RLIMIT_NOFILE
}

// WithDefaults returns a copy with every zero field set to its default.
func (c QueueConfig) WithDefaults() QueueConfig {
	if c.Weight == 0 {
		c.Weight = DefaultWeight
	}
	if c.Ordered {
		c.Concurrency = 1
	} else if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Timeout == 0 {
		c.Timeout = Duration(DefaultTimeout)
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Backoff.Base == 0 {
		c.Backoff.Base = Duration(DefaultBackoffBase)
	}
	if c.Backoff.Max == 0 {
		c.Backoff.Max = Duration(DefaultBackoffMax)
	}
	return c
}

// Validate checks the configuration; the error names the field.
func (c QueueConfig) Validate() error {
	if err := ValidateQueueName(c.Name); err != nil {
		return fmt.Errorf("queue config: name: %w", err)
	}
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: queue %s: %s: %s", ErrInvalidConfig, c.Name, field, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Weight < 0:
		return bad("weight", "must be ≥ 0, have %d", c.Weight)
	case c.Concurrency < 0:
		return bad("concurrency", "must be ≥ 0, have %d", c.Concurrency)
	case c.Ordered && c.Concurrency > 1:
		return bad("concurrency", "an ordered queue runs one task at a time, have %d", c.Concurrency)
	case c.Timeout < 0:
		return bad("timeout", "must be ≥ 0, have %s", c.Timeout.Std())
	case c.MaxAttempts < 0:
		return bad("max_attempts", "must be ≥ 0, have %d", c.MaxAttempts)
	case c.Backoff.Base < 0 || c.Backoff.Max < 0:
		return bad("backoff", "durations must be ≥ 0")
	case c.Backoff.Jitter < 0 || c.Backoff.Jitter > 1:
		return bad("backoff.jitter", "must be within 0–1, have %g", c.Backoff.Jitter)
	case c.Retention < 0:
		return bad("retention", "must be ≥ 0, have %s", c.Retention.Std())
	case c.Outcomes.Retention != nil && *c.Outcomes.Retention < 0:
		return bad("outcomes.retention", "must be ≥ 0, have %s", c.Outcomes.Retention.Std())
	case math.IsNaN(c.RateLimit.PerSecond):
		return bad("rate_limit.per_second", "must be a number within 0–%d (0: no limit), have NaN", MaxRatePerSecond)
	case math.IsNaN(c.Backoff.Jitter):
		return bad("backoff.jitter", "must be a number within 0–1, have NaN")
	case c.RateLimit.PerSecond < 0 || c.RateLimit.PerSecond > MaxRatePerSecond:
		return bad("rate_limit.per_second", "must be within 0–%d (0: no limit), have %g", MaxRatePerSecond, c.RateLimit.PerSecond)
	case c.RateLimit.Burst < 0 || c.RateLimit.Burst > MaxRateBurst:
		return bad("rate_limit.burst", "must be within 0–%d, have %d", MaxRateBurst, c.RateLimit.Burst)
	case c.RateLimit.Burst > 0 && c.RateLimit.PerSecond == 0:
		return bad("rate_limit.burst", "set rate_limit.per_second too (a burst without a rate limits nothing)")
	case c.OnFailure != "" && c.OnFailure != OnFailureDeadLetter && c.OnFailure != OnFailurePark:
		return bad("on_failure", "want %q or %q, have %q", OnFailureDeadLetter, OnFailurePark, c.OnFailure)
	case c.OnFailure == OnFailurePark && !c.Ordered:
		return bad("on_failure", "park keeps an ordered queue's order; set ordered too (an unordered queue retries and dead-letters)")
	case c.Outcomes.Max < 0:
		return bad("outcomes.max", "must be ≥ 0, have %d", c.Outcomes.Max)
	case c.Outcomes.StdoutTail < 0 || c.Outcomes.StdoutTail > MaxOutcomeStdoutTail:
		return bad("outcomes.stdout_tail", "must be within 0–%d bytes, have %d", MaxOutcomeStdoutTail, c.Outcomes.StdoutTail)
	}
	for name, r := range c.Tasks {
		n := 0
		if len(r.Command) > 0 {
			n++
		}
		if r.Inline {
			n++
		}
		if r.Go {
			n++
		}
		if n != 1 {
			return bad("tasks."+name, "set exactly one of command, inline or go")
		}
		if len(r.Command) > 0 && r.Command[0] == "" {
			return bad("tasks."+name+".command", "argv[0] is empty")
		}
		if p := r.Pool; p != nil {
			switch {
			case r.Inline:
				return bad("tasks."+name+".pool", "an inline route runs in the worker process and cannot be pooled")
			case p.MaxTasksPerChild < 0:
				return bad("tasks."+name+".pool.max_tasks_per_child", "must be ≥ 0, have %d", p.MaxTasksPerChild)
			case p.MaxMemoryPerChild < 0:
				return bad("tasks."+name+".pool.max_memory_per_child", "must be ≥ 0, have %d", p.MaxMemoryPerChild)
			case p.MaxChildAge < 0:
				return bad("tasks."+name+".pool.max_child_age", "must be ≥ 0, have %s", p.MaxChildAge.Std())
			}
		}
	}
	return nil
}

// Route returns the route for task: its own, else the "*" route.
func (c QueueConfig) Route(task string) (TaskRoute, bool) {
	if r, ok := c.Tasks[task]; ok {
		return r, true
	}
	r, ok := c.Tasks["*"]
	return r, ok
}
