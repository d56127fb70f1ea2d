package drover

import "time"

// ReadRequest is one queue's read in a batch (an owner reads the queues
// woken since its last read in one round trip): up to N entries with
// positions after After.
type ReadRequest struct {
	Queue string
	After Position
	N     int
	// Starts asks for each entry's recorded starts (LogEntry.Starts); an
	// entry read without it says 0. An owner asks until it has caught up
	// once since its claim: only messages a previous owner may have
	// started can have any it does not know of.
	Starts bool
}

// ReadResult is what a ReadRequest of a batch returned: the entries in
// position order (empty when nothing follows the offset), or Err.
type ReadResult struct {
	Entries []LogEntry
	Err     error
}

// PromoteRequest is one queue's promotion in a batch (an owner's queue
// loops promote together, one round trip for all): move up to Limit
// delayed messages due at or before Now into the log.
type PromoteRequest struct {
	Queue string
	Now   time.Time
	Limit int
}

// PromoteResult is what a PromoteRequest of a batch did: how many messages
// moved, and the due time of the earliest one still delayed (zero when none
// is), or Err.
type PromoteResult struct {
	Moved int
	Next  time.Time
	Err   error
}
