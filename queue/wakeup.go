package queue

import (
	"context"
	"fmt"
)

// wakeupBuffer is how many queue names Wakeups holds for a slow reader
// before it drops new ones.
const wakeupBuffer = 1024

// Wakeups subscribes to the wake-up channel and returns a channel of queue
// names: one each time a message was enqueued to that queue (at most one per
// enqueue pipeline and queue). It returns once the subscription is
// confirmed. The channel is closed after ctx ends, when the goroutine that
// feeds it has exited.
//
// Wake-ups are hints, not a delivery guarantee: Pub/Sub drops messages while
// the subscription reconnects (go-redis resubscribes by itself), and names are
// dropped when the reader falls more than 1024 behind. A reader must still
// poll its queues, at a slow interval.
func (s *Store) Wakeups(ctx context.Context) (<-chan string, error) {
	sub := s.rdb.Subscribe(ctx, s.keys.wakeupChannel())
	if _, err := sub.Receive(ctx); err != nil {
		_ = sub.Close()
		return nil, fmt.Errorf("subscribe to %s: %w", s.keys.wakeupChannel(), err)
	}
	out := make(chan string, wakeupBuffer)
	in := sub.Channel()
	go func() {
		defer close(out)
		defer sub.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case msg, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- msg.Payload:
				default:
					s.log.Debug("wake-up dropped: reader is behind", "queue", msg.Payload)
				}
			}
		}
	}()
	return out, nil
}
