package worker

import (
	"context"
	"time"

	"github.com/drover-dev/drover"
)

// Delivery is one entry read from a queue's log.
type Delivery struct {
	Position drover.Position
	ID       string
	Raw      []byte          // the envelope as stored
	Message  *drover.Message // nil when Err is set
	Err      error           // wraps drover.ErrPoison when the envelope is undecodable
}

// Log is a queue's storage as a queue loop reads it.
type Log interface {
	// ReadAfter returns up to n deliveries with positions after `after`,
	// in position order, in one round trip.
	ReadAfter(ctx context.Context, queue string, after drover.Position, n int) ([]Delivery, error)
	// PromoteDue moves up to limit delayed messages whose due time is at or
	// before now into the log, with fresh positions; it returns how many.
	PromoteDue(ctx context.Context, queue string, now time.Time, limit int) (int, error)
	// Trim removes log entries at or below offset (only those older than
	// retention when it is non-zero).
	Trim(ctx context.Context, queue string, offset drover.Position, retention time.Duration) error
}

// Requeuer records the outcome of a failed attempt.
type Requeuer interface {
	// Retry stores m (Attempt already incremented) as a delayed message
	// due at due.
	Retry(ctx context.Context, m *drover.Message, due time.Time) error
	// DeadLetter moves a message to the queue's dead letters.
	DeadLetter(ctx context.Context, queue string, d drover.DeadLetter) error
}

// Claim is this member's fenced ownership of one queue.
type Claim interface {
	// Offset is the committed offset when the queue was claimed.
	Offset() drover.Offset
	// Commit stores a new offset. An error wrapping drover.ErrFenced,
	// drover.ErrNotOwner or drover.ErrSessionLost means the queue is lost:
	// the caller must stop it and must not retry.
	Commit(ctx context.Context, off drover.Offset) error
	// Release stores the final offset and gives the queue up.
	Release(ctx context.Context, off drover.Offset) error
}

// isLost reports whether a commit error means the queue belongs to someone
// else now.
func isLost(err error) bool {
	return errorsIs(err, drover.ErrFenced) || errorsIs(err, drover.ErrNotOwner) || errorsIs(err, drover.ErrSessionLost)
}
