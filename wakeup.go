package drover

import "time"

// Wakeup is one notification on a member's wake-up channel: a queue that
// got a message (the owner starts its parked loop), a due time of delayed
// messages, or the news that wake-ups may have been lost.
type Wakeup struct {
	// Queue is the queue a message was enqueued to; empty for Missed.
	Queue string
	// Due, when not zero, is the earliest due time of delayed messages
	// the enqueue added: the owner should promote the queue then.
	Due time.Time
	// Missed says wake-ups may have been lost: the subscription was
	// re-established after a broken connection, or the reader fell behind
	// and some were dropped. The reader should check every queue it owns
	// (one amortised pass), not wait for a wake-up that may never come.
	Missed bool
}
