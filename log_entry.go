package drover

import "fmt"

// LogEntry is one entry of a queue's log as read (queue.Log.ReadAfter):
// its position, its id and its envelope as stored. The envelope is decoded
// only when asked (Decode), so that reading stays cheap for callers that do
// not need every message decoded.
type LogEntry struct {
	Queue    string
	Position Position
	ID       string
	// Raw is the envelope JSON from :msg; nil when the id has no envelope
	// (which makes the entry poison).
	Raw []byte
	// Starts is how many times the message was started when it was read
	// (its field in the queue's :attempts hash; 0 when none is recorded):
	// its owner counts its attempts from it (docs/redis-schema.md,
	// "Attempts").
	Starts int
}

// PoisonError says why an entry cannot be processed: its envelope is
// missing, is not a valid envelope, or names another id. It matches
// ErrPoison with errors.Is. The worker dead-letters such entries with
// Error() as the reason; they never stop the queue.
type PoisonError struct {
	Queue    string
	ID       string
	Position Position
	Reason   string // what is wrong, for people
	Err      error  // the decoder's error, if any
}

func (e *PoisonError) Error() string {
	return fmt.Sprintf("queue %s: message %s at %d: poison: %s", e.Queue, e.ID, e.Position, e.Reason)
}

// Unwrap returns ErrPoison and the decoder's error.
func (e *PoisonError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrPoison, e.Err}
	}
	return []error{ErrPoison}
}

// Decode decodes the entry's envelope into a Message with Position set (and
// Queue, when the envelope lacks it). It never panics; an entry that cannot
// be processed returns a *PoisonError. Each call decodes afresh.
func (e *LogEntry) Decode() (*Message, error) {
	if e.Raw == nil {
		return nil, &PoisonError{Queue: e.Queue, ID: e.ID, Position: e.Position, Reason: "no envelope in :msg"}
	}
	m, err := DecodeMessage(e.Raw)
	if err != nil {
		return nil, &PoisonError{Queue: e.Queue, ID: e.ID, Position: e.Position, Reason: err.Error(), Err: err}
	}
	if m.ID != e.ID {
		return nil, &PoisonError{Queue: e.Queue, ID: e.ID, Position: e.Position,
			Reason: fmt.Sprintf("envelope id %q differs from the log's id", m.ID)}
	}
	if m.Queue == "" {
		m.Queue = e.Queue
	}
	m.Position = e.Position
	return m, nil
}
