package drover

import "time"

// Backlog describes the work waiting in a queue after an offset.
type Backlog struct {
	// Lag is the number of log entries after the offset.
	Lag int64
	// OldestAge is how long the first entry after the offset has waited,
	// by Redis's clock; 0 when Lag is 0.
	OldestAge time.Duration
	// Oldest is the first position after the offset; 0 when Lag is 0.
	Oldest Position
	// Delayed is the number of messages in the delayed set (scheduled
	// messages and retries).
	Delayed int64
	// Dead is the number of dead letters.
	Dead int64
}
