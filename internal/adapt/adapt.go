package main

import (
	"context"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/worker"
)

// The adapters between the runtime's small interfaces and the concrete
// stores. Compile-time assertions keep them honest.
var (
	_ worker.Log           = queueLog{}
	_ worker.Requeuer      = queueLog{}
	_ worker.Claim         = (*coordinator.Claim)(nil)
	_ coordinator.Runner   = workerRunner{}
	_ scheduler.Store      = (*queue.ScheduleStore)(nil)
	_ scheduler.Leadership = (*electionLeadership)(nil)
)

// queueLog adapts *queue.Store to worker.Log and worker.Requeuer.
type queueLog struct{ s *queue.Store }

func (l queueLog) ReadAfter(ctx context.Context, q string, after drover.Position, n int) ([]worker.Delivery, error) {
	es, err := l.s.ReadAfter(ctx, q, after, n)
	if err != nil {
		return nil, err
	}
	ds := make([]worker.Delivery, len(es))
	for i := range es {
		e := &es[i]
		m, err := e.Decode()
		ds[i] = worker.Delivery{Position: e.Position, ID: e.ID, Raw: e.Raw, Message: m, Err: err}
	}
	return ds, nil
}

func (l queueLog) Backlog(ctx context.Context, q string, off drover.Position) (worker.Backlog, error) {
	b, err := l.s.Backlog(ctx, q, off)
	if err != nil {
		return worker.Backlog{}, err
	}
	return worker.Backlog{Lag: b.Lag, OldestAge: b.OldestAge, Delayed: b.Delayed, Dead: b.Dead}, nil
}

func (l queueLog) PromoteDue(ctx context.Context, q string, now time.Time, limit int) (int, error) {
	return l.s.PromoteDue(ctx, q, now, limit)
}

func (l queueLog) Trim(ctx context.Context, q string, off drover.Position, retention time.Duration) error {
	_, err := l.s.Trim(ctx, q, off, retention)
	return err
}

func (l queueLog) Retry(ctx context.Context, m *drover.Message, due time.Time) error {
	return l.s.Retry(ctx, m, due)
}

func (l queueLog) DeadLetter(ctx context.Context, q string, d drover.DeadLetter) error {
	raw := d.Raw
	if d.Message != nil {
		b, err := d.Message.MarshalJSON()
		if err != nil {
			return err
		}
		raw = b
	}
	return l.s.Kill(ctx, q, d.ID, raw, d.Failure)
}

// workerRunner adapts *worker.Worker to coordinator.Runner.
type workerRunner struct{ w *worker.Worker }

func (r workerRunner) StartQueue(c *coordinator.Claim, qc drover.QueueConfig) error {
	return r.w.Start(qc, c)
}
func (r workerRunner) StopQueue(ctx context.Context, q string) error { return r.w.Stop(ctx, q) }
func (r workerRunner) AbortQueue(q string)                           { r.w.Abort(q) }
func (r workerRunner) ConfigureQueue(qc drover.QueueConfig)          { r.w.Configure(qc) }

// electionLeadership adapts a coordinator election to scheduler.Leadership:
// a term lasts while this session leads and is connected.
type electionLeadership struct {
	el        *coordinator.Election
	candidate string
	lead      *coordinator.Leadership
	cancel    context.CancelFunc
}

func (e *electionLeadership) Lead(ctx context.Context) (context.Context, error) {
	if e.cancel != nil {
		e.cancel()
		e.cancel = nil
	}
	for {
		if e.lead == nil || e.lead.Err() != nil {
			lead, err := e.el.Campaign(ctx, e.candidate)
			if err != nil {
				return nil, err
			}
			e.lead = lead
		}
		term, cancel, err := e.lead.Act(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			e.lead = nil // leadership ended: campaign again
			continue
		}
		e.cancel = cancel
		return term, nil
	}
}

// resign gives the leadership up (shutdown).
func (e *electionLeadership) resign() {
	if e.cancel != nil {
		e.cancel()
	}
	if e.lead != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.lead.Resign(ctx)
	}
}
