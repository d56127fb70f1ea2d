// Package adapt holds the adapters between the runtime's small interfaces
// (worker.Log, worker.Requeuer, coordinator.Runner, scheduler.Leadership)
// and the concrete stores. The binary, the end-to-end tests and the
// benchmarks wire the same code.
package adapt

import (
	"context"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/worker"
)

// The adapters between the runtime's small interfaces and the concrete
// stores. Compile-time assertions keep them honest.
var (
	_ worker.Log      = QueueLog{}
	_ worker.Requeuer = QueueLog{}
	_ scheduler.Store = (*queue.ScheduleStore)(nil)
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
