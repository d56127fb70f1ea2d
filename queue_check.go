package drover

import "time"

// QueueCheck is what an owner's amortised check found for one queue
// (DESIGN.md §10): the backstop against lost wake-ups reads many idle
// queues in one round trip instead of polling each.
type QueueCheck struct {
	Queue string
	// Ready: the log holds a message after the offset given.
	Ready bool
	// NextDue is the due time of the earliest delayed message; zero when
	// nothing is delayed.
	NextDue time.Time
}
