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

// WakeupForwarder passes on wake-ups that reached a member which does not
// run their queues (queue.Listener.ForwardWakeups): a producer publishes on
// the owner's route it last read, which may name the previous owner.
type WakeupForwarder interface {
	ForwardWakeups(ctx context.Context, member string, queues ...string) (int, error)
}

// forwardBuffer is how many queues' wake-ups wait to be passed on; past it
// they are dropped (wake-ups are hints: the owner's backstop finds the
// messages).
const forwardBuffer = 1024

// FollowWakeups feeds the member's wake-ups to the worker until ctx ends: a
// wake-up starts the queue's parked loop, a due time goes to the idle
// scheduler, and a Missed wake-up (the subscription reconnected, or this
// reader fell behind) checks every parked queue at once, in one amortised
// pass. Without a subscription the backstop check (every poll interval)
// still finds every message, so a failed subscribe is logged, not fatal.
//
// When src is also a WakeupForwarder, the wake-up of a queue this worker
// does not run is passed on to the queue's owner, in the background, many
// queues a call.
func (w *Worker) FollowWakeups(ctx context.Context, src WakeupSource) {
	ch, err := src.Wakeups(ctx, w.cfg.Member)
	if err != nil {
		w.cfg.Logger.Warn("no enqueue notifications; the backstop check finds messages every poll interval", "error", err)
		<-ctx.Done()
		return
	}
	var forward chan string
	if f, ok := src.(WakeupForwarder); ok {
		forward = make(chan string, forwardBuffer)
		done := make(chan struct{})
		defer func() { close(forward); <-done }()
		go func() {
			defer close(done)
			w.forwardWakeups(ctx, f, forward)
		}()
	}
	for wk := range ch {
		switch {
		case wk.Missed:
			w.MissedWakeups()
		case forward != nil && wk.Due.IsZero() && w.loop(wk.Queue) == nil:
			select {
			case forward <- wk.Queue:
			default: // full: dropped, as a lost wake-up
			}
		case !wk.Due.IsZero():
			w.WakeAt(wk.Queue, wk.Due)
		case wk.Entry != nil:
			w.WakeWith(wk)
		default:
			w.Wake(wk.Queue)
		}
	}
}

// forwardWakeups passes on the queues sent to it until it is closed: what
// is waiting, up to a call's worth and each queue once, a call at a time.
func (w *Worker) forwardWakeups(ctx context.Context, f WakeupForwarder, queues <-chan string) {
	for q := range queues {
		batch := []string{q}
		seen := map[string]bool{q: true}
	more:
		for len(batch) < forwardBuffer {
			select {
			case q, ok := <-queues:
				if !ok {
					break more
				}
				if !seen[q] {
					seen[q] = true
					batch = append(batch, q)
				}
			default:
				break more
			}
		}
		if n, err := f.ForwardWakeups(ctx, w.cfg.Member, batch...); err != nil {
			w.cfg.Logger.Debug("pass on wake-ups of queues this member does not run", "queues", len(batch), "error", err)
		} else {
			w.stages.forwarded.Add(int64(n))
		}
	}
}
