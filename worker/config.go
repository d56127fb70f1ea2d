package worker

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/tracing"
	"github.com/drover-dev/drover/worker/executor"
	"github.com/hashicorp/go-hclog"
)

// Defaults of Config.
const (
	DefaultCapacity        = 16
	DefaultBatchSize       = 100
	DefaultCommitInterval  = 200 * time.Millisecond
	DefaultDrainTimeout    = 30 * time.Second
	DefaultPollInterval    = 5 * time.Second
	DefaultPromoteInterval = time.Second
	DefaultBacklogInterval = 5 * time.Second
	// backlogRefreshIntervals: BacklogRefresh's default, in BacklogIntervals.
	backlogRefreshIntervals = 12
)

// Config configures a Worker. The zero value of every field means its
// documented default; Store and Executor are required.
type Config struct {
	// Member is this worker's member name, written into committed offsets
	// and logs.
	Member string
	// Capacity is how many tasks run at once across all queues. Default 16.
	Capacity int
	// BatchSize is how many messages one read fetches. Default 100.
	BatchSize int
	// CommitInterval is how often the worker commits: every interval, one
	// coalesced commit carries the offsets of all the queues that
	// progressed (so ZooKeeper sees a few writes per interval per member,
	// whatever the number of busy queues). A completed position waits at
	// most this long; when the whole member drains (no queue has work)
	// after being busy for a quarter interval it is committed at once,
	// early flushes being an interval apart, so at most two flushes start
	// per interval. Default 200ms.
	CommitInterval time.Duration
	// DrainTimeout bounds how long a leaving stop (Stop with
	// drover.StopLeave, StopQueues) waits for in-flight tasks before it kills
	// them. A planned stop (drover.StopPlanned) does not use it: it waits
	// for each task's own timeout. Default 30s.
	DrainTimeout time.Duration
	// KillGrace is the executor's kill grace (executor.Config.KillGrace):
	// how long past its deadline a task may take to end. A planned stop
	// waits at most the queue's timeout plus this for its running tasks
	// before it treats them as stuck and kills them. Default
	// executor.DefaultKillGrace.
	KillGrace time.Duration
	// PollInterval is how often the worker's backstop against lost
	// wake-ups runs: one amortised check of all its parked queues (a
	// Store.QueueHeads call), not a read per queue. A message whose wake-up was
	// lost runs at most this late. A running queue whose read-ahead is full
	// re-reads this often. Default 5s.
	PollInterval time.Duration
	// PromoteInterval is how often a running queue (tasks in flight)
	// promotes due delayed messages on its own, counted from the start of
	// its run; a turn with no task in flight (one that waits for its read,
	// say) does not. A parked queue (and one that parks between messages)
	// promotes when the worker's idle scheduler says a delayed message is
	// due (learnt from wake-ups, promotions and retries), at no cost before.
	// Default 1s.
	PromoteInterval time.Duration
	// BacklogInterval is how often a running queue's owner publishes its
	// backlog gauges (lag, oldest age, delayed, dead); a queue publishes them as it parks too (at most this
	// often), and never on a timer while parked. Default 5s.
	BacklogInterval time.Duration
	// BacklogRefresh is how often, at least, a caught-up queue reads its
	// delayed and dead counts when its last read found none and nothing
	// its owner saw since (a retry, a dead letter, a delayed enqueue's
	// wake-up, a promotion) could have added one: what another process
	// does to them (an operator's purge or revoke) shows within it. In
	// between, such a queue sets its gauges again without a read, at most
	// once per BacklogInterval, well inside the gauges' retention
	// (metrics.DefaultGaugeRetention). At least BacklogInterval. Default
	// 12 × BacklogInterval (60s).
	BacklogRefresh time.Duration

	Store    Store    // required: the queues' storage (one port: interfaces.go)
	Executor Executor // required
	// Pauser, if set, lets an ordered queue with on_failure park pause
	// itself at a failed head (parkhead.go). Without it such a queue
	// dead-letters the head, as on_failure dead_letter does, and warns.
	Pauser Pauser

	// Confirm, if set, asks the coordination session to prove it is alive
	// with a fresh round trip. Run calls it after noticing that the process
	// was frozen (SIGSTOP, a VM or GC pause): until it returns nil no task
	// starts, because the session may have expired meanwhile and the queues
	// may belong to another member already.
	Confirm func(ctx context.Context) error

	// Renew, if set, renews the task lease (executor.Lease.Renew) when the
	// coordination session allows it: Run calls it on every beat of the
	// freeze guard (every 100 ms) while no freeze is pending, and after a
	// freeze only once Confirm has succeeded. When the worker stops
	// beating (frozen), the lease's supervisor kills its tasks. It must not
	// block.
	Renew func()

	// Tracer, when set, opens a span per task delivery (a child of the
	// producer's trace in the envelope's headers) and hands its context to
	// the executor. Default nil: tracing off.
	Tracer *tracing.Tracer

	Logger  hclog.Logger     // default: null logger
	Metrics metrics.Recorder // default: metrics.Discard
	// Clock is the time of the queue loops' timers, backoff waits and the
	// freeze guard. Default: drover.SystemClock.
	Clock drover.TimerClock
	// Jitter returns a float in [0,1) for backoff jitter. Default: math/rand/v2.
	Jitter func() float64
}

func (c Config) withDefaults() (Config, error) {
	if c.Store == nil {
		return c, fmt.Errorf("%w: worker: Store is required", drover.ErrInvalidConfig)
	}
	if c.Executor == nil {
		return c, fmt.Errorf("%w: worker: Executor is required", drover.ErrInvalidConfig)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Capacity", c.Capacity}, {"BatchSize", c.BatchSize}} {
		if f.v < 0 {
			return c, fmt.Errorf("%w: worker: %s must be ≥ 0, have %d", drover.ErrInvalidConfig, f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"CommitInterval", c.CommitInterval}, {"DrainTimeout", c.DrainTimeout}, {"KillGrace", c.KillGrace}, {"PollInterval", c.PollInterval}, {"PromoteInterval", c.PromoteInterval}, {"BacklogInterval", c.BacklogInterval}, {"BacklogRefresh", c.BacklogRefresh}} {
		if f.v < 0 {
			return c, fmt.Errorf("%w: worker: %s must be ≥ 0, have %s", drover.ErrInvalidConfig, f.name, f.v)
		}
	}
	// cmp.Or: the first value that is not zero, so a zero field takes its
	// default.
	c.Capacity = cmp.Or(c.Capacity, DefaultCapacity)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.CommitInterval = cmp.Or(c.CommitInterval, DefaultCommitInterval)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, DefaultDrainTimeout)
	c.KillGrace = cmp.Or(c.KillGrace, executor.DefaultKillGrace)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.PromoteInterval = cmp.Or(c.PromoteInterval, DefaultPromoteInterval)
	c.BacklogInterval = cmp.Or(c.BacklogInterval, DefaultBacklogInterval)
	c.BacklogRefresh = cmp.Or(c.BacklogRefresh, backlogRefreshIntervals*c.BacklogInterval)
	if c.BacklogRefresh < c.BacklogInterval {
		return c, fmt.Errorf("%w: worker: BacklogRefresh must be ≥ BacklogInterval (%s), have %s", drover.ErrInvalidConfig, c.BacklogInterval, c.BacklogRefresh)
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Metrics == nil {
		c.Metrics = metrics.Discard
	}
	if c.Clock == nil {
		c.Clock = drover.SystemClock{}
	}
	if c.Jitter == nil {
		c.Jitter = rand.Float64
	}
	return c, nil
}
