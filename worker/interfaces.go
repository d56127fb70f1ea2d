package worker

import (
	"context"
	"errors"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/worker/executor"
)

// Executor runs task attempts; executor.New returns the one cmd/drover
// wires. Execute blocks until the attempt has ended and every process it
// started is gone; cancelling ctx means "abort now" (the Outcome is then
// executor.OutcomeAborted).
type Executor interface {
	Execute(ctx context.Context, t *executor.Task) executor.Result
}

// PoolReleaser is an Executor that keeps warm children for pooled routes
// (executor.PoolOwner): a queue loop releases its queue's children when the
// queue is paused or stops, and State lists the pools.
type PoolReleaser interface {
	ReleaseQueue(queue string)
	PoolStates() []executor.PoolState
}

// Log is a queue's storage as a queue loop reads it.
type Log interface {
	// ReadAfter returns up to n entries with positions after `after`, in
	// position order, in one round trip. An entry whose envelope is missing
	// is returned too (Raw nil): the loop dead-letters it as poison.
	ReadAfter(ctx context.Context, queue string, after drover.Position, n int) ([]drover.LogEntry, error)
	// PromoteDueNext moves up to limit delayed messages whose due time is
	// at or before now into the log, with fresh positions; it returns how
	// many, and the due time of the earliest message still delayed (zero
	// when none is), which the worker's idle scheduler waits for.
	PromoteDueNext(ctx context.Context, queue string, now time.Time, limit int) (int, time.Time, error)
	// Trim removes log entries at or below offset (only those older than
	// retention when it is non-zero) and returns how many it removed.
	Trim(ctx context.Context, queue string, offset drover.Position, retention time.Duration) (int, error)
}

// Requeuer records the outcome of a failed attempt.
type Requeuer interface {
	// Retry stores m (Attempt already incremented) as a delayed message
	// due at due.
	Retry(ctx context.Context, m *drover.Message, due time.Time) error
	// DeadLetter moves a message to the queue's dead letters.
	DeadLetter(ctx context.Context, queue string, d drover.DeadLetter) error
}

// QueueChecker is a Log that checks many queues in one round trip: the
// worker's amortised backstop against lost wake-ups (DESIGN.md §10). Every
// PollInterval, and at once after MissedWakeups, the worker checks its
// parked queues with it: a queue with a message after its fetched offset is
// woken, a queue with a delayed message is scheduled for its due time. A
// Log without it makes the backstop wake every parked queue instead.
type QueueChecker interface {
	// CheckQueues reports, for each of queues, whether a message follows
	// its offset (offsets[i], the offset to look after, is queues[i]'s)
	// and when the queue's earliest delayed message is due: one check
	// per queue, in the order of queues.
	CheckQueues(ctx context.Context, queues []string, offsets []drover.Position) ([]drover.QueueCheck, error)
}

// HeadReader is a Log that reads many queues' heads (the last position
// handed out) in one round trip, at a key lookup per queue. With it the
// periodic backstop reads heads and wakes the parked queues whose head is
// past their fetched offset; QueueChecker then runs only for queues just
// started and after missed wake-ups, the passes that must also learn due
// times (which otherwise arrive by wake-up, promotion and retry).
//
// The worker passes a buffer of its own, so that the pass over every
// parked queue allocates nothing per queue.
type HeadReader interface {
	// QueueHeads appends the head of each of queues, in their order, to
	// heads and returns the extended slice.
	QueueHeads(ctx context.Context, queues []string, heads []drover.Position) ([]drover.Position, error)
}

// BatchTrimmer is a Log that trims many queues in one round trip (with
// their outcome records, as OutcomeTrimmer). The worker's committer trims
// every queue of a commit flush with one call.
type BatchTrimmer interface {
	TrimMany(ctx context.Context, reqs []drover.TrimRequest) []error
}

// Backlog is a queue's backlog after its committed offset (drover.Backlog).
type Backlog = drover.Backlog

// BacklogReader reads a queue's backlog at a cost that does not grow with
// its size. A Log that also implements it gets backlog gauges published by
// the queue's owner every Config.BacklogInterval.
type BacklogReader interface {
	Backlog(ctx context.Context, queue string, offset drover.Position) (Backlog, error)
}

// Claim is this member's fenced ownership of one queue (drover.Claim). A
// queue loop commits through it, finally releases it, and stops the queue
// when a commit is refused; whoever claimed the queue learns that from the
// claim itself (Done, Err).
type Claim = drover.Claim

// ClaimVerifier is a Claim that can confirm with its store that it still
// holds. A queue loop verifies its claim when it is unpaused (or its session
// resumes), since an operator may have reset the offset while it was paused:
// an error wrapping drover.ErrFenced then drops the queue, and the
// reconciler claims it again from the reset offset.
type ClaimVerifier interface {
	Verify(ctx context.Context) error
}

// isLost reports whether a commit error means the queue belongs to someone
// else now.
func isLost(err error) bool {
	return errors.Is(err, drover.ErrFenced) || errors.Is(err, drover.ErrNotOwner) || errors.Is(err, drover.ErrSessionLost)
}
