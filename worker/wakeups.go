package worker

import (
	"context"

	"github.com/drover-dev/drover"
)

// WakeupSource subscribes to a member's wake-up channel
// (queue.Listener.Wakeups). The channel closes when ctx ends.
type WakeupSource interface {
	Wakeups(ctx context.Context, member string) (<-chan drover.Wakeup, error)
}

// FollowWakeups feeds the member's wake-ups to the worker until ctx ends: a
// wake-up starts the queue's parked loop, a due time goes to the idle
// scheduler, and a Missed wake-up (the subscription reconnected, or this
// reader fell behind) checks every parked queue at once, in one amortised
// pass. Without a subscription the backstop check (every poll interval)
// still finds every message, so a failed subscribe is logged, not fatal.
func (w *Worker) FollowWakeups(ctx context.Context, src WakeupSource) {
	ch, err := src.Wakeups(ctx, w.cfg.Member)
	if err != nil {
		w.cfg.Logger.Warn("no enqueue notifications; the backstop check finds messages every poll interval", "error", err)
		<-ctx.Done()
		return
	}
	for wk := range ch {
		switch {
		case wk.Missed:
			w.MissedWakeups()
		case !wk.Due.IsZero():
			w.WakeAt(wk.Queue, wk.Due)
		case wk.Entry != nil:
			w.WakeWith(wk)
		default:
			w.Wake(wk.Queue)
		}
	}
}
