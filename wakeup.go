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
	// Entry, when not nil, is the message the enqueue wrote, carried by
	// the wake-up of a lone message (docs/redis-schema.md, "Wake-ups"):
	// read without its starts (Starts is 0 and means nothing). Prev is the
	// position of the message before it in the queue: an owner whose read
	// ended exactly at Prev may take Entry as read, since every writer of
	// a log takes its positions from the queue's :seq and none lies
	// between. Any other owner reads.
	Entry *LogEntry
	Prev  Position
}
