package scheduler

import (
	"context"
	"time"

	"github.com/drover-dev/drover"
)

// The interfaces in this file are what the scheduler needs from the world.
// queue.ScheduleStore implements Store and Catalog on Redis; the
// coordinator's scheduler election implements Leadership; an adapter around
// (*queue.Store).Enqueue implements Enqueuer (see EnqueuerFunc).

// Record is a schedule entry as stored (drover.ScheduleRecord).
type Record = drover.ScheduleRecord

// Special scores (drover.SchedulePlan, drover.ScheduleParked).
var (
	ScorePlan   = drover.SchedulePlan
	ScoreParked = drover.ScheduleParked
)

// Store is the leader loop's view of the schedule entries. Every method
// costs O(entries involved), never O(all entries).
type Store interface {
	// DueSchedules returns up to limit entries whose score is at or before
	// until (in Unix seconds), lowest score first, with their definitions
	// and metadata.
	DueSchedules(ctx context.Context, until time.Time, limit int) ([]Record, error)
	// NextScheduleDue returns the lowest finite score above after: when the
	// next entry becomes due. ok is false when there is none.
	NextScheduleDue(ctx context.Context, after time.Time) (due time.Time, ok bool, err error)
	// AdvanceSchedule sets the entry's score to to if and only if it is
	// still from (compare-and-set). It returns false, and changes nothing,
	// when the score moved on (another scheduler advanced it, or the entry
	// was updated or removed meanwhile).
	AdvanceSchedule(ctx context.Context, name string, from, to float64) (bool, error)
	// RecordScheduleFires adds fires to the entry's total_run_count and, if
	// lastSlot is later than the stored last_fire, sets last_fire to
	// lastSlot and last_run_at to ranAt. Calls commute, so that records
	// arriving out of order (two schedulers racing) keep the latest slot. It
	// does nothing when the entry has been removed.
	RecordScheduleFires(ctx context.Context, name string, fires int, lastSlot, ranAt time.Time) error
}

// Catalog is the management API's view of the schedule entries.
type Catalog interface {
	// CreateSchedule stores a new entry's definition and gives it score
	// ScorePlan. It returns ErrExists when the name is taken.
	CreateSchedule(ctx context.Context, name string, definition []byte) error
	// ReplaceSchedule overwrites an existing entry's definition, keeps its
	// metadata, and gives it score ScorePlan. It returns drover.ErrNotFound
	// when there is no such entry.
	ReplaceSchedule(ctx context.Context, name string, definition []byte) error
	// DeleteSchedule removes the entry (index member and hash). It returns
	// drover.ErrNotFound when there is no such entry.
	DeleteSchedule(ctx context.Context, name string) error
	// GetSchedule returns one entry, or drover.ErrNotFound.
	GetSchedule(ctx context.Context, name string) (Record, error)
	// ListSchedules returns every entry, in name order.
	ListSchedules(ctx context.Context) ([]Record, error)
}

// ErrExists is returned by Add (and Catalog.CreateSchedule) when an entry of
// that name already exists (drover.ErrScheduleExists).
var ErrExists = drover.ErrScheduleExists

// Enqueuer puts a fired job into its queue.
type Enqueuer interface {
	// Enqueue enqueues m, whose ID is the caller-chosen idempotency key
	// sched:<name>:<slot-unix>. Enqueueing an id the queue already knows
	// must be a no-op that returns duplicate true: that is what keeps two
	// schedulers from firing a slot twice. An error means the outcome is
	// unknown; the scheduler retries the same id later.
	Enqueue(ctx context.Context, m *drover.Message) (duplicate bool, err error)
}

// EnqueuerFunc adapts a function to Enqueuer, e.g. around
// (*queue.Store).Enqueue:
//
//	scheduler.EnqueuerFunc(func(ctx context.Context, m *drover.Message) (bool, error) {
//		res, err := store.Enqueue(ctx, m)
//		return res.Duplicate, err
//	})
type EnqueuerFunc func(ctx context.Context, m *drover.Message) (duplicate bool, err error)

// Enqueue calls f.
func (f EnqueuerFunc) Enqueue(ctx context.Context, m *drover.Message) (bool, error) {
	return f(ctx, m)
}

// Leadership is the scheduler's view of the election among scheduler
// candidates (the coordinator's /election/scheduler).
//
// A term is one uninterrupted stretch of leadership. The scheduler fires only
// while its current term's context is live and checks it before every
// enqueue. The election must cancel the term's context
//
//   - as soon as leadership is suspended: the ZooKeeper session is
//     disconnected and not yet confirmed (the scheduler stops firing), and
//   - when leadership is lost: the session expired or was replaced, or the
//     candidate's node is gone (the scheduler gives up the term).
//
// Firing a slot twice is prevented by the idempotent message ids and the
// compare-and-set on the entry's score, not by the election: a deposed
// leader that is still finishing an enqueue cannot double-fire. The election
// only keeps the work on one scheduler at a time.
type Leadership interface {
	// Lead blocks until the caller leads, then returns the term's context.
	// After a term ended, calling Lead again waits for the next one: at
	// once when a suspended session is confirmed again, after re-election
	// when leadership was lost. Lead returns ctx.Err() when ctx ends first,
	// or another error when the candidate cannot take part in the election
	// any more; Run then returns that error.
	Lead(ctx context.Context) (term context.Context, err error)
}

// SoleLeader is a Leadership for a scheduler without rivals (tests, a
// single-node deployment): every call to Lead returns a term that lasts as
// long as ctx.
type SoleLeader struct{}

// Lead returns ctx itself, or ctx.Err() when ctx is done.
func (SoleLeader) Lead(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return ctx, nil
}
