package drover

import "context"

// Claim is a member's fenced ownership of one queue, as the runtime holds
// it: the coordinator makes one when a queue is claimed, the worker commits
// through it and finally releases it, and the member's reconciler learns
// from it when the queue is lost.
type Claim interface {
	// Offset is the offset as claimed or last committed.
	Offset() Offset
	// Commit stores a new offset. An error wrapping ErrFenced, ErrNotOwner or
	// ErrSessionLost means the queue is lost: the caller must stop it and
	// must not retry.
	Commit(ctx context.Context, off Offset) error
	// Release stores the final offset and gives the queue up.
	Release(ctx context.Context, off Offset) error
	// Done is closed when the claim has ended: released, or fenced (by a
	// newer owner, an offset reset, or the end of its session, as learnt
	// by a write or a verification). It never reopens.
	Done() <-chan struct{}
	// Err is nil while the claim holds, then says why it ended: wrapping
	// ErrFenced when it was lost, ErrNotOwner when it was released.
	Err() error
}
