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

// Store is the queue storage a worker runs on: one required port, every
// ability in it (package queue's store implements it; so do the tests'
// fakes, so that the tests run the paths production runs). The batched
// calls (ReadMany, TrimMany, CheckQueues, QueueHeads, BacklogMany,
// RouteWakeups) are how the worker stays at a few round trips per interval
// whatever its number of queues (DESIGN.md §10); the per-queue calls serve a
// queue's own promotion, its last trim at release, and its outcomes.
//
// The batch request types (drover.ReadRequest, drover.TrimRequest, ...)
// stay in the root package: package queue implements this port and must
// not import the runtime (docs/decisions.md, issue 32).
type Store interface {
	// ReadAfter returns up to n entries with positions after `after`, in
	// position order, in one round trip. An entry whose envelope is missing
	// is returned too (Raw nil): the loop dead-letters it as poison.
	ReadAfter(ctx context.Context, queue string, after drover.Position, n int) ([]drover.LogEntry, error)
	// ReadMany returns one result per request, in order, each what
	// ReadAfter returns for it alone, in one round trip. The worker's
	// queue loops read through it (read.go).
	ReadMany(ctx context.Context, reqs []drover.ReadRequest) []drover.ReadResult
	// PromoteMany, for each request, moves up to Limit delayed messages
	// whose due time is at or before Now into the log, with fresh
	// positions, and says how many, and the due time of the earliest
	// message still delayed (zero when none is), which the worker's idle
	// scheduler waits for; one result per request, in order, in one round
	// trip. The worker's queue loops promote through it (promote.go).
	PromoteMany(ctx context.Context, reqs []drover.PromoteRequest) []drover.PromoteResult
	// Trim removes log entries at or below offset (only those older than
	// retention when it is non-zero) and returns how many it removed.
	Trim(ctx context.Context, queue string, offset drover.Position, retention time.Duration) (int, error)
	// TrimMany trims many queues in one round trip, with their outcome
	// records (as TrimRecording); one error per request, in order. The
	// worker's committer trims every queue of a commit flush with it.
	TrimMany(ctx context.Context, reqs []drover.TrimRequest) []error
	// TrimRecording keeps outcome records of finished jobs per policy
	// (drover.Outcomes), then trims as Trim does; it returns how many log
	// entries the trim removed. A queue's release trims with it, so records
	// cost no round trip of their own.
	TrimRecording(ctx context.Context, queue string, offset drover.Position, retention time.Duration, outcomes []drover.Outcome, policy drover.Outcomes) (int, error)
	// Retry stores m (Attempt already incremented) as a delayed message
	// due at due.
	Retry(ctx context.Context, m *drover.Message, due time.Time) error
	// DeadLetter moves a message to the queue's dead letters.
	DeadLetter(ctx context.Context, queue string, d drover.DeadLetter) error
	// RecordStarts records one start of each message ids[i] of queues[i]
	// and returns each message's starts so far, this one included, in
	// order, in one round trip; it fails as a whole. A message's attempt
	// count lives there, with the message, not in its owner's memory
	// (attempts.go).
	RecordStarts(ctx context.Context, queues, ids []string) ([]int, error)
	// ParkHead records that queue parked at its head id: the head's
	// recorded starts are forgotten (its attempts start again when the
	// queue is resumed) and its envelope, while it is still read, is
	// replaced by parked, which carries the attempts made. A head no
	// longer in the log is left alone.
	ParkHead(ctx context.Context, queue, id string, read, parked []byte) error
	// CheckQueues reports, for each of queues, whether a message follows
	// its offset (offsets[i], the offset to look after, is queues[i]'s)
	// and when the queue's earliest delayed message is due: one check per
	// queue, in the order of queues, in one round trip. It is the worker's
	// amortised backstop against lost wake-ups (DESIGN.md §10) for queues
	// just started and after missed wake-ups: a queue with a message after
	// its fetched offset is woken, a queue with a delayed message is
	// scheduled for its due time.
	CheckQueues(ctx context.Context, queues []string, offsets []drover.Position) ([]drover.QueueCheck, error)
	// QueueHeads appends the head (the last position handed out) of each
	// of queues, in their order, to heads and returns the extended slice,
	// in one round trip at a key lookup per queue: the periodic backstop
	// wakes the parked queues whose head is past their fetched offset. The
	// worker passes a buffer of its own, so that the pass over every
	// parked queue allocates nothing per queue.
	QueueHeads(ctx context.Context, queues []string, heads []drover.Position) ([]drover.Position, error)
	// Backlog reads a queue's backlog after offset at a cost that does not
	// grow with its size.
	Backlog(ctx context.Context, queue string, offset drover.Position) (drover.Backlog, error)
	// BacklogMany returns, in the order of queues, what Backlog returns for
	// each queue after offsets[i], in one round trip: the queue owners'
	// backlog gauges go through it (backlog.go).
	BacklogMany(ctx context.Context, queues []string, offsets []drover.Position) ([]drover.Backlog, []error)
	// RouteWakeups points the wake-ups of queues at member (one pipelined
	// write per batch of queues): the worker routes every queue it starts
	// to itself, in the background (routes.go).
	RouteWakeups(ctx context.Context, member string, queues ...string) error
}

// Backlog is a queue's backlog after its committed offset (drover.Backlog).
type Backlog = drover.Backlog

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

// errShortRecordStarts: a Store's RecordStarts returned another number of
// counts than starts.
var errShortRecordStarts = errors.New("record starts: a count per start expected")
