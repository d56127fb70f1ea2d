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

// TrimRequest is one queue's trim in a batch (an owner's committer trims
// the queues of one commit flush in one round trip): the log up to Offset
// is removed, Outcomes (records of the messages it covers) are kept first
// under Policy, and Retention keeps entries younger than it. With
// RecordsOnly the records are kept and the log is left as it is (the
// owner trims it later). With SweepSeen the trim also forgets the queue's
// caller-chosen ids whose dedupe window has ended (up to 1,000): an owner
// asks for it in about one trim in ten, not at every trim (worker/commit.go,
// sweepsSeen).
type TrimRequest struct {
	Queue       string
	Offset      Position
	Retention   time.Duration
	Outcomes    []Outcome
	Policy      Outcomes
	RecordsOnly bool
	SweepSeen   bool
}
