package drover

import "time"

// QueueCheck is what an owner's amortised check found for one queue
// (DESIGN.md §10): the backstop against lost wake-ups reads many idle
// queues in one round trip instead of polling each.
type QueueCheck struct {
	Queue string
	// Ready: the log holds a message after the offset given.
	Ready bool
	// Stale: the log still holds a message at or before the offset given
	// (processed, not trimmed yet): a new owner's check of a queue whose
	// last owner was lost before its trim.
	Stale bool
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
// sweepsSeen). Bucket, when set, is the owner's note of the bucket its
// queue's records went to last: the trim takes it with the records and
// writes the new one back (RecordBucket).
type TrimRequest struct {
	Queue       string
	Offset      Position
	Retention   time.Duration
	Outcomes    []Outcome
	Policy      Outcomes
	RecordsOnly bool
	SweepSeen   bool
	Bucket      *RecordBucket
}

// RecordBucket is a queue owner's note of the outcome-record bucket its
// records went to last, as the trim that wrote them answered: with it the
// next records skip finding the current bucket and counting it (a record
// costs Redis one command, not three: queue's recordFunction). The owner is the one writer of
// its records while it owns the queue; a note made stale by another
// writer costs at most the records it did not see over a bucket's size.
// The zero value is no note.
type RecordBucket struct {
	Name   string // the bucket's name in the index ("" when none)
	Expiry int64  // its expiry, unix ms
	Held   int64  // the records it holds
}
