// Package adapt holds the adapters between the runtime's small interfaces
// (worker.Log, worker.Requeuer, coordinator.Runner, scheduler.Leadership)
// and the concrete stores. The binary, the end-to-end tests and the
// benchmarks wire the same code.
package adapt

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/worker"
)

// The adapters between the runtime's small interfaces and the concrete
// stores. Compile-time assertions keep them honest.
var (
	_ worker.Log           = QueueLog{}
	_ worker.Requeuer      = QueueLog{}
	_ worker.Claim         = (*coordinator.Claim)(nil)
	_ coordinator.Runner   = WorkerRunner{}
	_ scheduler.Store      = (*queue.ScheduleStore)(nil)
	_ scheduler.Leadership = (*ElectionLeadership)(nil)
)

// QueueLog adapts *queue.Store to worker.Log, worker.Requeuer and
// worker.BacklogReader.
type QueueLog struct{ Store *queue.Store }

func (l QueueLog) ReadAfter(ctx context.Context, q string, after drover.Position, n int) ([]worker.Delivery, error) {
	es, err := l.Store.ReadAfter(ctx, q, after, n)
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

func (l QueueLog) Backlog(ctx context.Context, q string, off drover.Position) (worker.Backlog, error) {
	b, err := l.Store.Backlog(ctx, q, off)
	if err != nil {
		return worker.Backlog{}, err
	}
	return worker.Backlog{Lag: b.Lag, OldestAge: b.OldestAge, Delayed: b.Delayed, Dead: b.Dead}, nil
}

func (l QueueLog) PromoteDue(ctx context.Context, q string, now time.Time, limit int) (int, error) {
	return l.Store.PromoteDue(ctx, q, now, limit)
}

func (l QueueLog) Trim(ctx context.Context, q string, off drover.Position, retention time.Duration) error {
	_, err := l.Store.Trim(ctx, q, off, retention)
	return err
}

func (l QueueLog) Retry(ctx context.Context, m *drover.Message, due time.Time) error {
	return l.Store.Retry(ctx, m, due)
}

func (l QueueLog) DeadLetter(ctx context.Context, q string, d drover.DeadLetter) error {
	raw := d.Raw
	if d.Message != nil {
		b, err := d.Message.MarshalJSON()
		if err != nil {
			return err
		}
		raw = b
	}
	return l.Store.Kill(ctx, q, d.ID, raw, d.Failure)
}

// WorkerRunner adapts *worker.Worker to coordinator.Runner. With Store set,
// starting a queue first routes its wake-ups to Member (queue.RouteWakeups),
// so that enqueues wake this member alone; a failed route is logged and the
// queue runs anyway (it is then found by the worker's polling).
type WorkerRunner struct {
	W      *worker.Worker
	Store  *queue.Store
	Member string
	Logger hclog.Logger
}

func (r WorkerRunner) StartQueue(c *coordinator.Claim, qc drover.QueueConfig) error {
	if r.Store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := r.Store.RouteWakeups(ctx, r.Member, qc.Name)
		cancel()
		if err != nil && r.Logger != nil {
			r.Logger.Warn("wake-ups of the queue not routed here; it is polled", "queue", qc.Name, "error", err)
		}
	}
	return r.W.Start(qc, c)
}
func (r WorkerRunner) StopQueue(ctx context.Context, q string) error { return r.W.Stop(ctx, q) }
func (r WorkerRunner) AbortQueue(q string)                           { r.W.Abort(q) }
func (r WorkerRunner) ConfigureQueue(qc drover.QueueConfig)          { r.W.Configure(qc) }

// ElectionLeadership adapts a coordinator election to scheduler.Leadership:
// a term lasts while this session leads and is connected. It is not safe for
// concurrent use (the scheduler calls Lead from one goroutine).
type ElectionLeadership struct {
	Election  *coordinator.Election
	Candidate string
	lead      *coordinator.Leadership
	cancel    context.CancelFunc
}

func (e *ElectionLeadership) Lead(ctx context.Context) (context.Context, error) {
	if e.cancel != nil {
		e.cancel()
		e.cancel = nil
	}
	for {
		if e.lead == nil || e.lead.Err() != nil {
			lead, err := e.Election.Campaign(ctx, e.Candidate)
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

// Resign gives the leadership up (shutdown).
func (e *ElectionLeadership) Resign() {
	if e.cancel != nil {
		e.cancel()
	}
	if e.lead != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.lead.Resign(ctx)
	}
}
