package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/metrics"
	"github.com/drover-dev/drover/tracing"
)

// Defaults for Config fields left zero.
const (
	DefaultPollInterval = time.Second
	DefaultBatchSize    = 1000
	DefaultConcurrency  = 16
	DefaultMisfireGrace = time.Minute
	DefaultCatchupLimit = 1000
)

// Config configures a Scheduler. The zero value of every field but Store,
// Enqueuer and Leadership means the documented default.
type Config struct {
	// Store holds the entries (queue.ScheduleStore). Required.
	Store Store
	// Enqueuer puts fired jobs into their queues. Required.
	Enqueuer Enqueuer
	// Leadership says when this process may fire. Required; SoleLeader{}
	// for a scheduler without rivals.
	Leadership Leadership
	// Clock is the scheduler's "now". Default: the system clock.
	Clock drover.Clock
	// Logger receives the scheduler's log lines. Default: a null logger.
	Logger hclog.Logger
	// Tracer, when set, opens a span per fired slot, linked to the
	// schedule (tracing.ScheduleSpanContext); the job's enqueue and task
	// are its children. Default nil: tracing off.
	Tracer *tracing.Tracer
	// Metrics receives metrics.ScheduleFires, ScheduleDuplicates (a slot
	// another scheduler had already enqueued), ScheduleSkipped (slots not
	// fired by catch-up policy), ScheduleInvalid, ScheduleLateness (how late
	// after its due time a slot was enqueued) and SchedulerLeading (1 while
	// this process fires). Default: metrics.Discard.
	Metrics metrics.Recorder
	// PollInterval is the longest the leader sleeps between two looks at the
	// schedule index: an entry added by another process (or with redis-cli)
	// is seen within it. Default 1s.
	PollInterval time.Duration
	// BatchSize is how many due entries one index read returns
	// (ZRANGEBYSCORE … LIMIT). Default 1000.
	BatchSize int
	// Concurrency is how many due entries are fired at once. Default 16.
	Concurrency int
	// MisfireGrace is how late a slot may be and still count as on time
	// (CatchupSkip fires only on-time slots). Default 1m.
	MisfireGrace time.Duration
	// CatchupLimit is the most missed slots CatchupAll fires for one entry
	// after an outage (the most recent ones). Default 1000.
	CatchupLimit int
}

// Scheduler is the leader loop: while elected, it fires due entries into
// their queues. It is safe to run several (one per candidate): the
// idempotent slot ids and the compare-and-set on each entry's score keep a
// slot from firing twice even when two of them act as leader at once.
type Scheduler struct {
	store       Store
	enqueuer    Enqueuer
	leadership  Leadership
	clock       drover.Clock
	log         hclog.Logger
	metrics     metrics.Recorder
	poll        time.Duration
	batch       int
	concurrency int
	grace       time.Duration
	limit       int
	tracer      *tracing.Tracer
}

// New validates cfg and returns a Scheduler. Errors name the field and wrap
// drover.ErrInvalidConfig.
func New(cfg Config) (*Scheduler, error) {
	bad := func(field, why string) error {
		return fmt.Errorf("%w: scheduler.Config.%s %s", drover.ErrInvalidConfig, field, why)
	}
	switch {
	case cfg.Store == nil:
		return nil, bad("Store", "is required")
	case cfg.Enqueuer == nil:
		return nil, bad("Enqueuer", "is required")
	case cfg.Leadership == nil:
		return nil, bad("Leadership", "is required (SoleLeader{} for a single scheduler)")
	case cfg.PollInterval < 0:
		return nil, bad("PollInterval", "must not be negative")
	case cfg.BatchSize < 0:
		return nil, bad("BatchSize", "must not be negative")
	case cfg.Concurrency < 0:
		return nil, bad("Concurrency", "must not be negative")
	case cfg.MisfireGrace < 0:
		return nil, bad("MisfireGrace", "must not be negative")
	case cfg.CatchupLimit < 0:
		return nil, bad("CatchupLimit", "must not be negative")
	}
	// cmp.Or: the first value that is not zero, so a zero (nil) field takes
	// its default.
	s := &Scheduler{
		store: cfg.Store, enqueuer: cfg.Enqueuer, leadership: cfg.Leadership,
		tracer: cfg.Tracer,

		clock:       cmp.Or[drover.Clock](cfg.Clock, drover.SystemClock{}),
		log:         cmp.Or(cfg.Logger, hclog.NewNullLogger()),
		metrics:     cmp.Or(cfg.Metrics, metrics.Discard),
		poll:        cmp.Or(cfg.PollInterval, DefaultPollInterval),
		batch:       cmp.Or(cfg.BatchSize, DefaultBatchSize),
		concurrency: cmp.Or(cfg.Concurrency, DefaultConcurrency),
		grace:       cmp.Or(cfg.MisfireGrace, DefaultMisfireGrace),
		limit:       cmp.Or(cfg.CatchupLimit, DefaultCatchupLimit),
	}
	return s, nil
}

// Run takes part in the election and fires due entries during every term,
// until ctx ends. It blocks; it returns nil when ctx ends, or the error with
// which Leadership.Lead gave up. Store and enqueue errors do not stop it:
// they are logged and retried after PollInterval.
func (s *Scheduler) Run(ctx context.Context) error {
	for {
		term, err := s.leadership.Lead(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("scheduler: wait for leadership: %w", err)
		}
		s.log.Info("leading: firing schedules")
		s.metrics.SetGauge(metrics.SchedulerLeading, 1)
		s.lead(term)
		s.metrics.SetGauge(metrics.SchedulerLeading, 0)
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn("leadership suspended or lost: stopped firing")
	}
}

// lead ticks until term ends, sleeping until the next due entry but at most
// PollInterval.
func (s *Scheduler) lead(term context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-term.Done():
			return
		case <-timer.C:
		}
		wait := s.poll
		next, err := s.Tick(term)
		switch {
		case term.Err() != nil:
			return
		case err != nil:
			s.log.Error("schedule tick failed; retrying", "in", wait, "error", err)
		case !next.IsZero():
			wait = min(wait, max(next.Sub(s.clock.Now()), 0))
		}
		timer.Reset(wait)
	}
}
